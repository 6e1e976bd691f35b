// Overview: the dashboard counters (/v1/metrics), reports by status, deadlines due or
// overdue (/v1/deadlines/notifications) with their severity.
import { api, can } from '../api.js';
import { t } from '../i18n.js';
import { h, replace, badge, when } from '../dom.js';

const STATUSES = ['Processing', 'Finished', 'Partial', 'Error'];

function counter(label, value, note) {
  return h('div', { class: 'counter' }, h('span', { class: 'label', text: label }), h('span', { class: 'value', text: value }), note ? h('span', { class: 'muted', text: note }) : null);
}

export async function render(main) {
  const counters = h('section', { class: 'counters', 'aria-label': t('overview.title') });
  const byStatus = h('section', { class: 'card' }, h('h2', { text: t('overview.byStatus') }));
  const due = h('section', { class: 'card' }, h('h2', { text: t('overview.due') }));
  replace(main, h('h1', { text: t('overview.title') }), counters, h('div', { class: 'cols' }, byStatus, due));
  const jobs = [];
  if (can('metrics:read')) {
    jobs.push(api('GET', '/v1/metrics').then((m) => replace(counters,
      counter(t('overview.templates'), m.templates),
      counter(t('overview.reports'), m.reports),
      counter(t('overview.datasources'), m.dataSources),
      counter(t('overview.errors'), m.errors.total, t('overview.previous', { n: m.errors.previousPeriodTotal })))));
  }
  if (can('reports:read')) {
    jobs.push(Promise.all(STATUSES.map((s) => api('GET', '/v1/reports', { query: { status: s, limit: 1 } }).then((p) => [s, p.total])))
      .then((rows) => byStatus.appendChild(h('ul', { class: 'plain' }, rows.map(([s, n]) => h('li', {}, badge(s), ' ', h('a', { href: `#/reports?status=${s}`, text: String(n) })))))));
  }
  if (can('deadlines:read')) {
    jobs.push(api('GET', '/v1/deadlines/notifications', { query: { limit: 20 } }).then((n) => {
      if (!n.items.length) { due.appendChild(h('p', { class: 'muted', text: t('none') })); return; }
      due.appendChild(h('ul', { class: 'plain' }, n.items.map((d) => h('li', {},
        badge(d.severity), ' ', h('strong', { text: d.name }), ' — ', when(d.dueDate), ' (', t('overview.days', { n: d.daysUntilDue }), ')'))));
    }));
  }
  await Promise.all(jobs.map((j) => j.catch((e) => main.appendChild(h('p', { class: 'error', role: 'alert', text: `${e.code || t('error')}: ${e.message}` })))));
}
