// Events: the manifest (event types, delivery profile, payload schema); with memory://
// publication the deliveries as they went on the wire; for streaming:admin, the redrive of
// parked events.
import { api, can } from '../api.js';
import { t } from '../i18n.js';
import { h, replace, toast, badge } from '../dom.js';

export async function render(main) {
  const m = await api('GET', '/v1/streaming/events');
  const wire = h('section', { class: 'card', id: 'deliveries', 'aria-live': 'polite' });
  async function deliveries() {
    try {
      const d = await api('GET', '/v1/streaming/deliveries', { query: { limit: 100 } });
      replace(wire, h('h2', { text: t('events.deliveries') }),
        h('button', { type: 'button', text: t('events.refresh'), onclick: deliveries }),
        d.items.length ? h('ol', { class: 'wire', reversed: true }, d.items.slice().reverse().map((x) => h('li', { 'data-type': x.headers['ce-type'] || '' },
          h('details', {}, h('summary', {}, h('code', { text: x.routingKey }), ' ', x.headers['ce-type'] || '', ' ', h('span', { class: 'muted', text: x.headers['ce-time'] || '' })),
            h('h3', { text: t('events.headers') }), h('pre', { class: 'output', text: JSON.stringify(x.headers, null, 2) }),
            h('h3', { text: t('events.payload') }), h('pre', { class: 'output', text: JSON.stringify(x.payload, null, 2) })))))
          : h('p', { class: 'muted', text: t('none') }));
    } catch (e) {
      if (e.status === 404) replace(wire, h('h2', { text: t('events.deliveries') }), h('p', { class: 'muted', text: t('events.noDeliveries') }));
      else replace(wire, h('p', { class: 'error', text: `${e.code || ''} ${e.message}` }));
    }
  }
  const admin = can('streaming:admin') ? h('section', { class: 'card' }, h('button', {
    type: 'button', text: t('events.redrive'),
    onclick: async () => {
      try { const r = await api('POST', '/v1/streaming/outbox/redrive'); toast(t('events.redriven', { n: r.redriven })); } catch (e) { toast(`${e.code || ''} ${e.message}`, 'error'); }
    },
  })) : null;
  replace(main, h('h1', { text: t('events.title') }), admin, wire,
    h('section', { class: 'card' }, h('h2', { text: `${t('events.manifest')} (${m.version})` }),
      h('table', {}, h('thead', {}, h('tr', {}, ['key', t('events.type'), t('events.profile'), t('templates.description'), t('events.schema')].map((x) => h('th', { text: x })))),
        h('tbody', {}, m.events.map((e) => h('tr', {},
          h('td', {}, h('code', { text: e.key })), h('td', { text: e.ceType }), h('td', {}, badge(e.deliveryProfile)), h('td', { text: e.description }),
          h('td', {}, h('details', {}, h('summary', { text: t('events.schema') }), h('pre', { class: 'output', text: JSON.stringify(e.payloadSchema, null, 2) })))))))));
  await deliveries();
}
