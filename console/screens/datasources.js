// Data sources: each source's tables and fields, and its readiness (its `dataSource:<id>`
// check of /readyz).
import { api } from '../api.js';
import { t } from '../i18n.js';
import { h, replace, badge } from '../dom.js';

export async function render(main) {
  const list = await api('GET', '/v1/data-sources');
  let checks = [];
  try {
    const r = await fetch('/readyz');
    const body = await r.json();
    checks = Object.entries(body.checks || {}).map(([name, c]) => ({ name, ...(typeof c === 'object' ? c : { status: c }) }));
  } catch { checks = []; }
  const details = await Promise.all(list.map((ds) => api('GET', `/v1/data-sources/${encodeURIComponent(ds.id)}`).catch((e) => ({ ...ds, tables: [], error: e }))));
  replace(main, h('h1', { text: t('datasources.title') }), h('div', { class: 'cards' }, details.map((ds) => {
    const ready = checks.filter((c) => c.name === `dataSource:${ds.id}`);
    return h('section', { class: 'card', 'aria-label': ds.id },
      h('h2', { text: `${ds.id}` }),
      h('p', { class: 'muted', text: `${ds.type} — ${ds.externalName}` }),
      h('p', {}, h('strong', { text: `${t('datasources.ready')}: ` }), ready.length ? ready.map((c) => [badge(c.status || 'unknown'), ' ', c.error || '']) : h('span', { class: 'muted', text: '—' })),
      ds.error ? h('p', { class: 'error', text: `${ds.error.code || ''} ${ds.error.message}` }) : null,
      h('h3', { text: t('datasources.tables') }),
      (ds.tables || []).map((tb) => h('details', {}, h('summary', { text: `${tb.name} (${tb.fields.length})` }), h('ul', { class: 'fields' }, tb.fields.map((f) => h('li', {}, h('code', { text: f })))))));
  })));
}
