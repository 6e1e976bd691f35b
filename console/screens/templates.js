// Templates: the list with the API's filters and paging; upload by drag and drop; edit;
// delete with the cascade it causes; the source (highlighted) and the mapped fields.
import { api, can, uploadTemplate, templateSource, FORMATS } from '../api.js';
import { t } from '../i18n.js';
import { h, replace, field, select, toast, when } from '../dom.js';
import { highlighted } from '../highlight.js';
import { readBlocks, MarkerError } from '../builder_marker.js';
import { go } from '../app.js';

const LIMIT = 10;
/** Deadlines read per page, and the most pages read, to count a delete's cascade. */
const CASCADE_PAGE = 100;
const CASCADE_MAX_PAGES = 200;

function mappedList(mf) {
  const items = [];
  for (const [ds, tables] of Object.entries(mf || {})) {
    for (const [tb, fields] of Object.entries(tables)) items.push(h('li', {}, h('code', { text: `${ds}.${tb}` }), ': ', fields.join(', ')));
  }
  return items.length ? h('ul', { class: 'fields' }, items) : h('span', { class: 'muted', text: '—' });
}

function uploadCard(onDone) {
  const file = h('input', { type: 'file', accept: '.tpl' });
  const format = select(FORMATS, { value: 'html' });
  const desc = h('input', { type: 'text', maxlength: '1000' });
  const msg = h('p', { class: 'error', role: 'alert' });
  let chosen = null;
  const name = h('span', { class: 'muted' });
  const pick = (f) => {
    chosen = f;
    name.textContent = f ? f.name : '';
    const m = f && /\.(html|pdf|csv|xml|txt)\.tpl$/i.exec(f.name);
    if (m) format.value = m[1].toLowerCase();
  };
  file.addEventListener('change', () => pick(file.files[0]));
  const zone = h('div', {
    class: 'dropzone',
    ondragover: (e) => { e.preventDefault(); zone.classList.add('over'); },
    ondragleave: () => zone.classList.remove('over'),
    ondrop: (e) => { e.preventDefault(); zone.classList.remove('over'); pick(e.dataTransfer.files[0]); },
  }, h('p', { text: t('templates.drop') }), field(t('templates.file'), file), name);
  const form = h('form', {
    class: 'card',
    onsubmit: async (ev) => {
      ev.preventDefault();
      msg.textContent = '';
      if (!chosen) return;
      try {
        const tpl = await uploadTemplate(await chosen.text(), format.value, desc.value);
        toast(t('templates.uploaded'));
        onDone(tpl);
      } catch (e) {
        msg.textContent = `${e.code || t('error')}: ${e.message}${e.body && e.body.fields ? ` ${JSON.stringify(e.body.fields)}` : ''}`;
      }
    },
  }, h('h2', { text: t('templates.upload') }), zone,
  h('div', { class: 'row' }, field(t('templates.format'), format), field(t('templates.description'), desc)),
  h('button', { type: 'submit', class: 'primary', id: 'upload-submit', text: t('templates.upload') }), msg);
  return form;
}

/**
 * How many deadlines deleting template `id` will delete with it: every page of
 * GET /v1/deadlines (the API has no template filter), at most CASCADE_MAX_PAGES of them.
 * Answers `{ n, complete }`; `complete` is false when the pages ran out first.
 */
export async function cascadeCount(id) {
  let n = 0;
  let seen = 0;
  for (let page = 1; page <= CASCADE_MAX_PAGES; page += 1) {
    const p = await api('GET', '/v1/deadlines', { query: { limit: CASCADE_PAGE, page } });
    n += p.items.filter((d) => d.templateId === id).length;
    seen += p.items.length;
    if (!p.items.length || seen >= p.total) return { n, complete: true };
  }
  return { n, complete: false };
}

async function remove(tpl, refresh) {
  let n = 0;
  let complete = true;
  if (can('deadlines:read')) {
    try {
      ({ n, complete } = await cascadeCount(tpl.id));
    } catch {
      n = '?'; // the API reports the real count after the delete
    }
  }
  const ask = complete ? 'templates.deleteConfirm' : 'templates.deleteConfirmAtLeast';
  if (!window.confirm(t(ask, { name: tpl.description || tpl.id, n }))) return;
  const r = await api('DELETE', `/v1/templates/${tpl.id}`);
  toast(t('templates.deleted', { n: r.cascadedDeadlineCount }));
  refresh();
}

/** The source; for a builder-made one (its source carries the blocks: decided here, after
 * the source was fetched, not for every row of the list), "Open in builder" and the source
 * without the blocks comment. */
function details(tpl) {
  const src = h('div', {}, h('p', { class: 'muted', text: t('loading') }));
  templateSource(tpl.id).then((text) => {
    let built = null;
    let unreadable = null;
    try {
      built = readBlocks(text);
    } catch (e) {
      if (!(e instanceof MarkerError)) throw e;
      unreadable = t(e.reason, { detail: e.detail });
    }
    replace(src,
      built ? h('p', {}, h('button', { type: 'button', class: 'primary open-builder', text: t('templates.builder'), onclick: () => go('builder', { id: tpl.id }) }), ' ',
        h('span', { class: 'muted', text: t('templates.carriesBlocks') })) : null,
      unreadable ? h('p', { class: 'warn', text: unreadable }) : null,
      highlighted(built ? built.code : text));
  }).catch((e) => replace(src, h('p', { class: 'error', text: `${e.code || t('error')}: ${e.message}` })));
  return h('div', { class: 'details' },
    h('h3', { text: t('templates.fields') }), mappedList(tpl.mappedFields),
    h('h3', { text: t('templates.source') }), src);
}

export async function render(main, params) {
  const state = { page: Number(params.page || 1), outputFormat: params.outputFormat || '', description: params.description || '', createdAt: params.createdAt || '' };
  const list = h('section', { class: 'card', 'aria-live': 'polite' });
  const fmt = select([['', t('templates.any')], ...FORMATS], { value: state.outputFormat });
  const desc = h('input', { type: 'search', value: state.description });
  const created = h('input', { type: 'date', value: state.createdAt });
  const filters = h('form', {
    class: 'row filters',
    onsubmit: (e) => { e.preventDefault(); state.page = 1; state.outputFormat = fmt.value; state.description = desc.value; state.createdAt = created.value; load(); },
  }, field(t('templates.format'), fmt), field(t('templates.description'), desc), field(t('templates.createdOn'), created), h('button', { type: 'submit', text: t('apply') }));

  async function load() {
    replace(list, h('p', { text: t('loading') }));
    let page;
    try {
      page = await api('GET', '/v1/templates', { query: { page: state.page, limit: LIMIT, outputFormat: state.outputFormat, description: state.description, createdAt: state.createdAt } });
    } catch (e) {
      replace(list, h('p', { class: 'error', role: 'alert', text: `${e.code || ''} ${e.message}` }));
      return;
    }
    const pages = Math.max(1, Math.ceil(page.total / LIMIT));
    const rows = page.items.map((tpl) => {
      const more = h('tr', { hidden: true, class: 'template-details' }, h('td', { colspan: '4' }));
      const row = h('tr', {},
        h('td', {}, h('button', { type: 'button', class: 'link', 'aria-expanded': 'false', text: tpl.description || tpl.id,
          onclick: (e) => {
            if (!more.firstChild.firstChild) more.firstChild.appendChild(details(tpl));
            more.hidden = !more.hidden;
            e.target.setAttribute('aria-expanded', String(!more.hidden));
          } })),
        h('td', { text: tpl.outputFormat }),
        h('td', { text: when(tpl.createdAt) }),
        h('td', { class: 'actions' },
          can('templates:write') ? h('button', { type: 'button', text: t('edit'), onclick: () => go('editor', { id: tpl.id }) }) : null,
          can('reports:write') ? h('button', { type: 'button', text: t('templates.report'), onclick: () => go('reports', { templateId: tpl.id }) }) : null,
          can('templates:write') ? h('button', { type: 'button', class: 'danger', text: t('delete'), onclick: () => remove(tpl, load).catch((e) => toast(`${e.code || ''} ${e.message}`, 'error')) }) : null));
      return [row, more];
    });
    replace(list,
      page.items.length ? h('table', {},
        h('thead', {}, h('tr', {}, h('th', { text: t('templates.description') }), h('th', { text: t('templates.format') }), h('th', { text: t('templates.created') }), h('th', { text: t('actions') }))),
        h('tbody', {}, rows)) : h('p', { class: 'muted', text: t('none') }),
      h('nav', { class: 'pager', 'aria-label': 'Pages' },
        h('button', { type: 'button', text: t('prev'), disabled: state.page <= 1, onclick: () => { state.page -= 1; load(); } }),
        h('span', { text: t('page', { page: state.page, pages, total: page.total }) }),
        h('button', { type: 'button', text: t('next'), disabled: state.page >= pages, onclick: () => { state.page += 1; load(); } })));
  }

  replace(main, h('h1', { text: t('templates.title') }),
    can('templates:write') ? h('p', {}, h('a', { class: 'button', href: '#/editor', text: t('templates.new') })) : null,
    can('templates:write') ? uploadCard(() => load()) : null,
    h('section', { class: 'card' }, filters), list);
  await load();
}
