// Deadlines: a month calendar and the list; create, edit, delete; deliver and revert; the
// notifications (due or overdue, with severity).
import { api, can } from '../api.js';
import { t, lang } from '../i18n.js';
import { h, replace, field, select, toast, when, badge } from '../dom.js';

const FREQUENCIES = ['once', 'daily', 'weekly', 'monthly', 'semiannual', 'annual'];

/** `2027-03-31T23:59` (datetime-local, UTC) of an ISO instant. */
function localValue(iso) {
  return iso ? new Date(iso).toISOString().slice(0, 16) : '';
}

function formCard(existing, templates, onDone) {
  const d = existing || {};
  const name = h('input', { type: 'text', required: true, value: d.name || '', maxlength: '200' });
  const type = select(['regulatory', 'custom'], { value: d.type || 'regulatory' });
  const due = h('input', { type: 'datetime-local', required: true, value: localValue(d.dueDate) });
  const freq = select(FREQUENCIES, { value: d.frequency || 'once' });
  const color = h('input', { type: 'color', value: d.color || '#1e88e5' });
  const notify = h('input', { type: 'number', min: '0', max: '365', value: d.notifyDaysBefore ?? 7 });
  const months = h('input', { type: 'text', value: (d.monthsOfYear || []).join(','), inputmode: 'numeric' });
  const desc = h('input', { type: 'text', value: d.description || '' });
  const tpl = select([['', '—'], ...templates.map((x) => [x.id, x.description || x.id])], { value: d.templateId || '' });
  const msg = h('p', { class: 'error', role: 'alert' });
  return h('form', {
    class: 'card', id: 'deadline-form',
    onsubmit: async (ev) => {
      ev.preventDefault();
      msg.textContent = '';
      const body = {
        name: name.value, type: type.value, dueDate: new Date(`${due.value}:00Z`).toISOString().replace('.000Z', 'Z'),
        frequency: freq.value, color: color.value.toUpperCase(), notifyDaysBefore: Number(notify.value),
        monthsOfYear: months.value.split(',').map((x) => Number(x.trim())).filter((x) => x >= 1 && x <= 12),
      };
      if (desc.value) body.description = desc.value;
      if (tpl.value) body.templateId = tpl.value;
      try {
        if (existing) await api('PATCH', `/v1/deadlines/${existing.id}`, { json: body });
        else await api('POST', '/v1/deadlines', { json: body });
        toast(t('deadlines.saved'));
        onDone();
      } catch (e) {
        msg.textContent = `${e.code || t('error')}: ${e.message}${e.body.fields ? ` ${JSON.stringify(e.body.fields)}` : ''}`;
      }
    },
  }, h('h2', { text: existing ? t('deadlines.editing') : t('deadlines.new') }),
  h('div', { class: 'row' }, field(t('deadlines.name'), name), field(t('deadlines.type'), type), field(t('deadlines.due'), due), field(t('deadlines.frequency'), freq)),
  h('div', { class: 'row' }, field(t('deadlines.color'), color), field(t('deadlines.notify'), notify), field(t('deadlines.months'), months), field(t('templates.description'), desc), field(t('deadlines.template'), tpl)),
  h('button', { type: 'submit', class: 'primary', id: 'deadline-save', text: t('save') }),
  existing ? h('button', { type: 'button', text: t('cancel'), onclick: () => onDone() }) : null, msg);
}

function calendar(month, items, onMove) {
  const first = new Date(Date.UTC(month.getUTCFullYear(), month.getUTCMonth(), 1));
  const days = new Date(Date.UTC(month.getUTCFullYear(), month.getUTCMonth() + 1, 0)).getUTCDate();
  const offset = (first.getUTCDay() + 6) % 7; // weeks start on Monday
  const locale = lang() === 'pt' ? 'pt-BR' : 'en';
  const names = Array.from({ length: 7 }, (_, i) => new Date(Date.UTC(2024, 0, 1 + i)).toLocaleDateString(locale, { weekday: 'short', timeZone: 'UTC' }));
  const cells = [];
  for (let i = 0; i < offset; i += 1) cells.push(h('td', { class: 'empty' }));
  for (let day = 1; day <= days; day += 1) {
    const due = items.filter((d) => { const x = new Date(d.dueDate); return x.getUTCFullYear() === first.getUTCFullYear() && x.getUTCMonth() === first.getUTCMonth() && x.getUTCDate() === day; });
    cells.push(h('td', {}, h('span', { class: 'day', text: String(day) }),
      due.map((d) => h('span', { class: `chip s-${d.status}`, title: d.status, text: d.name }))));
  }
  const weeks = [];
  for (let i = 0; i < cells.length; i += 7) weeks.push(h('tr', {}, cells.slice(i, i + 7)));
  const title = first.toLocaleDateString(locale, { month: 'long', year: 'numeric', timeZone: 'UTC' });
  return h('section', { class: 'card' },
    h('div', { class: 'row cal-head' },
      h('button', { type: 'button', text: t('prev'), onclick: () => onMove(-1) }),
      h('h2', { text: `${t('deadlines.calendar')}: ${title}` }),
      h('button', { type: 'button', text: t('next'), onclick: () => onMove(1) })),
    h('table', { class: 'calendar' }, h('thead', {}, h('tr', {}, names.map((n) => h('th', { scope: 'col', text: n })))), h('tbody', {}, weeks)));
}

export async function render(main) {
  let month = new Date();
  month = new Date(Date.UTC(month.getUTCFullYear(), month.getUTCMonth(), 1));
  let items = [];
  let templates = [];
  if (can('templates:read')) {
    try { templates = (await api('GET', '/v1/templates', { query: { limit: 100 } })).items; } catch { templates = []; }
  }
  const calBox = h('div', {});
  const formBox = h('div', {});
  const listBox = h('section', { class: 'card', id: 'deadline-list' });
  const notesBox = h('section', { class: 'card' });

  const showForm = (existing) => replace(formBox, can('deadlines:write') ? formCard(existing, templates, () => { showForm(null); load(); }) : null);

  async function act(d, fn) {
    try { await fn(); await load(); } catch (e) { toast(`${e.code || t('error')}: ${e.message}`, 'error'); }
    return d;
  }

  async function load() {
    const page = await api('GET', '/v1/deadlines', { query: { limit: 100 } });
    items = page.items;
    replace(calBox, calendar(month, items, (step) => { month = new Date(Date.UTC(month.getUTCFullYear(), month.getUTCMonth() + step, 1)); load(); }));
    const w = can('deadlines:write');
    replace(listBox, h('h2', { text: t('deadlines.list') }), items.length ? h('table', {},
      h('thead', {}, h('tr', {}, [t('deadlines.name'), t('deadlines.type'), t('deadlines.due'), t('deadlines.frequency'), t('deadlines.status'), t('actions')].map((x) => h('th', { text: x })))),
      h('tbody', {}, items.map((d) => h('tr', { 'data-deadline': d.name },
        h('td', {}, h('span', { class: 'swatch', 'aria-hidden': 'true', 'data-color': d.color }), d.name),
        h('td', { text: d.type }), h('td', { text: when(d.dueDate) }), h('td', { text: d.frequency }),
        h('td', {}, badge(d.status)),
        h('td', { class: 'actions' }, w ? [
          d.status === 'delivered'
            ? h('button', { type: 'button', text: t('deadlines.revert'), onclick: () => act(d, () => api('PATCH', `/v1/deadlines/${d.id}/deliver`, { json: { delivered: false } })) })
            : h('button', { type: 'button', class: 'deliver', text: t('deadlines.deliver'), onclick: () => act(d, () => api('PATCH', `/v1/deadlines/${d.id}/deliver`, { json: { delivered: true } })) }),
          h('button', { type: 'button', text: t('edit'), onclick: () => showForm(d) }),
          h('button', { type: 'button', class: 'danger', text: t('delete'), onclick: () => { if (window.confirm(t('deadlines.deleteConfirm', { name: d.name }))) act(d, () => api('DELETE', `/v1/deadlines/${d.id}`)); } }),
        ] : null))))) : h('p', { class: 'muted', text: t('none') }));
    for (const sw of listBox.querySelectorAll('.swatch')) sw.style.background = sw.dataset.color;
    const notes = await api('GET', '/v1/deadlines/notifications', { query: { limit: 50 } });
    replace(notesBox, h('h2', { text: t('deadlines.notifications') }), notes.items.length ? h('ul', { class: 'plain' }, notes.items.map((n) => h('li', {},
      badge(n.severity), ' ', h('strong', { text: n.name }), ' — ', when(n.dueDate), ' (', t('overview.days', { n: n.daysUntilDue }), ')'))) : h('p', { class: 'muted', text: t('none') }));
  }

  replace(main, h('h1', { text: t('deadlines.title') }), formBox, calBox, listBox, notesBox);
  showForm(null);
  await load();
}
