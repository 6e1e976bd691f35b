// Reports: request one from a template with a filter form built from its mapped fields
// (data source → table → field → operator → values), the list with a status filter, status
// changes by polling, per-section outcome and error codes, download.
import { api, can, saveBlob, dispositionName } from '../api.js';
import { t } from '../i18n.js';
import { h, replace, field, select, toast, when, badge } from '../dom.js';

const OPERATORS = ['eq', 'gt', 'gte', 'lt', 'lte', 'between', 'in', 'nin'];
const STATUSES = ['Processing', 'Finished', 'Partial', 'Error'];
const POLL_MS = 1500;

function filterRow(mapped, onRemove) {
  const sources = Object.keys(mapped);
  const ds = select(sources);
  const tb = select([]);
  const fd = select([]);
  const op = select(OPERATORS, { value: 'eq' });
  const vals = h('input', { type: 'text' });
  const fillTables = () => {
    replace(tb, Object.keys(mapped[ds.value] || {}).map((x) => h('option', { value: x, text: x })));
    fillFields();
  };
  const fillFields = () => replace(fd, ((mapped[ds.value] || {})[tb.value] || []).map((x) => h('option', { value: x, text: x })));
  ds.addEventListener('change', fillTables);
  tb.addEventListener('change', fillFields);
  fillTables();
  const row = h('fieldset', { class: 'row filter' }, h('legend', { class: 'sr-only', text: t('reports.filters') }),
    field(t('reports.source'), ds), field(t('reports.table'), tb), field(t('reports.field'), fd), field(t('reports.operator'), op), field(t('reports.values'), vals),
    h('button', { type: 'button', text: t('builder.remove'), onclick: () => { row.remove(); onRemove(row); } }));
  row.value = () => {
    const values = vals.value.split(',').map((v) => v.trim()).filter((v) => v !== '');
    return values.length && fd.value ? [ds.value, tb.value, fd.value, op.value, values] : null;
  };
  return row;
}

function requestCard(templates, preselect, onDone) {
  const tplSel = select(templates.map((x) => [x.id, `${x.description || x.id} (${x.outputFormat})`]), { value: preselect || (templates[0] && templates[0].id), id: 'report-template' });
  const rows = [];
  const box = h('div', {});
  const addBtn = h('button', { type: 'button', text: t('reports.addFilter') });
  const mapped = () => (templates.find((x) => x.id === tplSel.value) || {}).mappedFields || {};
  addBtn.addEventListener('click', () => {
    const r = filterRow(mapped(), (gone) => rows.splice(rows.indexOf(gone), 1));
    rows.push(r);
    box.appendChild(r);
  });
  tplSel.addEventListener('change', () => { rows.length = 0; replace(box); });
  const msg = h('p', { class: 'error', role: 'alert' });
  return h('form', {
    class: 'card',
    onsubmit: async (ev) => {
      ev.preventDefault();
      msg.textContent = '';
      const filters = {};
      for (const r of rows) {
        const v = r.value();
        if (!v) continue;
        const [ds, tb, fd, op, values] = v;
        ((filters[ds] ??= {})[tb] ??= {})[fd] = { ...(((filters[ds] || {})[tb] || {})[fd] || {}), [op]: values };
      }
      try {
        await api('POST', '/v1/reports', { json: { templateId: tplSel.value, filters } });
        toast(t('reports.requested'));
        onDone();
      } catch (e) {
        msg.textContent = `${e.code || t('error')}: ${e.message}`;
      }
    },
  }, h('h2', { text: t('reports.request') }), field(t('reports.template'), tplSel),
  h('h3', { text: t('reports.filters') }), box, addBtn, ' ',
  h('button', { type: 'submit', class: 'primary', id: 'report-submit', text: t('reports.submit') }), msg);
}

async function download(r) {
  try {
    const resp = await api('GET', `/v1/reports/${r.id}/download`, { raw: true });
    saveBlob(await resp.blob(), dispositionName(resp, `${r.id}.${r.templateOutputFormat || 'out'}`));
  } catch (e) {
    toast(`${e.code || t('error')}: ${e.message}`, 'error');
  }
}

function details(r) {
  const m = r.metadata || {};
  const sections = Object.entries(m.sections || {});
  return h('div', { class: 'details' },
    h('h3', { text: t('reports.sections') }),
    sections.length ? h('table', {},
      h('thead', {}, h('tr', {}, h('th', { text: t('reports.source') }), h('th', { text: t('reports.status') }), h('th', { text: t('reports.errorCode') }))),
      h('tbody', {}, sections.map(([ds, s]) => h('tr', {}, h('td', { text: ds }), h('td', {}, badge(s.ok ? t('reports.ok') : t('reports.failed'), s.ok ? 'finished' : 'error')), h('td', { text: s.error_code || '—' })))))
      : h('p', { class: 'muted', text: '—' }),
    m.error_code || m.error ? h('p', { class: 'error', text: `${m.error_code || ''} ${m.error || ''}` }) : null,
    m.render_error ? h('p', { class: 'error', text: `${m.render_error.line ? `line ${m.render_error.line}: ` : ''}${m.render_error.message} (${m.render_error.cause})` }) : null,
    h('pre', { class: 'output', text: JSON.stringify(r.filters || {}, null, 2) }));
}

export async function render(main, params) {
  const state = { status: params.status || '', page: 1 };
  const list = h('section', { class: 'card', id: 'report-list', 'aria-live': 'polite' });
  const open = new Set();
  let timer = null;
  let stopped = false;
  const statusSel = select([['', t('reports.all')], ...STATUSES], { value: state.status });
  statusSel.addEventListener('change', () => { state.status = statusSel.value; load(); });

  async function load() {
    clearTimeout(timer);
    let page;
    try {
      page = await api('GET', '/v1/reports', { query: { status: state.status, limit: 20, page: state.page } });
    } catch (e) {
      replace(list, h('p', { class: 'error', role: 'alert', text: `${e.code || ''} ${e.message}` }));
      return;
    }
    if (stopped) return;
    const rows = page.items.map((r) => {
      const more = h('tr', { hidden: !open.has(r.id) }, h('td', { colspan: '5' }, details(r)));
      return [h('tr', { 'data-report': r.id, 'data-status': r.status },
        h('td', {}, h('button', { type: 'button', class: 'link', 'aria-expanded': String(open.has(r.id)), text: r.id.slice(0, 8),
          onclick: (e) => { if (open.has(r.id)) open.delete(r.id); else open.add(r.id); more.hidden = !open.has(r.id); e.target.setAttribute('aria-expanded', String(open.has(r.id))); } })),
        h('td', { text: r.templateDescription || r.templateId }),
        h('td', { text: r.templateOutputFormat || '' }),
        h('td', {}, badge(r.status), ' ', h('span', { class: 'muted', text: when(r.completedAt || r.createdAt) })),
        h('td', {}, r.status === 'Finished' || r.status === 'Partial' ? h('button', { type: 'button', class: 'download', text: t('reports.download'), onclick: () => download(r) }) : null)), more];
    });
    replace(list, page.items.length ? h('table', {},
      h('thead', {}, h('tr', {}, [t('reports.id'), t('reports.template'), t('reports.format'), t('reports.status'), t('actions')].map((x) => h('th', { text: x })))),
      h('tbody', {}, rows)) : h('p', { class: 'muted', text: t('none') }));
    if (page.items.some((r) => r.status === 'Processing')) timer = setTimeout(load, POLL_MS);
  }

  let templates = [];
  if (can('templates:read')) {
    try { templates = (await api('GET', '/v1/templates', { query: { limit: 100 } })).items; } catch { templates = []; }
  }
  replace(main, h('h1', { text: t('reports.title') }),
    can('reports:write') && templates.length ? requestCard(templates, params.templateId, load) : null,
    h('section', { class: 'card' }, h('div', { class: 'row' }, field(t('reports.status'), statusSel))),
    list);
  await load();
  return () => { stopped = true; clearTimeout(timer); };
}
