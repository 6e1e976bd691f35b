// Events: the manifest (event types, delivery profile, payload schema); with memory://
// publication the deliveries as they went on the wire; for streaming:admin, the parked
// events (GET /v1/streaming/outbox/parked: who, what, why, never the payload) and their
// redrive.
import { api, can } from '../api.js';
import { t } from '../i18n.js';
import { h, replace, toast, badge, when } from '../dom.js';

/** The parked events card of a streaming:admin: the list and the redrive. */
function parkedCard() {
  const card = h('section', { class: 'card', id: 'parked', 'aria-labelledby': 'parked-title' });
  const status = h('p', { role: 'status', class: 'muted' });
  async function load() {
    let page;
    try {
      page = await api('GET', '/v1/streaming/outbox/parked', { query: { limit: 100 } });
    } catch (e) {
      const text = e.status === 404 || e.status === 405 ? t('events.parkedOff') : `${e.code || t('error')}: ${e.message}`;
      replace(card, h('h2', { id: 'parked-title', text: t('events.parked') }), h('p', { class: e.status === 404 || e.status === 405 ? 'muted' : 'error', text }));
      return;
    }
    const redrive = h('button', {
      type: 'button', id: 'redrive', class: 'primary', text: t('events.redrive'), disabled: !page.items.length,
      onclick: async () => {
        redrive.disabled = true;
        try {
          const r = await api('POST', '/v1/streaming/outbox/redrive');
          toast(t('events.redriven', { n: r.redriven }));
          await load();
          status.textContent = t('events.redriven', { n: r.redriven });
        } catch (e) {
          redrive.disabled = false;
          toast(`${e.code || t('error')}: ${e.message}`, 'error');
        }
      },
    });
    replace(card, h('h2', { id: 'parked-title', text: `${t('events.parked')} (${page.items.length})` }),
      h('p', { class: 'muted', text: t('events.parkedIntro') }),
      h('div', { class: 'row' }, redrive, h('button', { type: 'button', text: t('events.refresh'), onclick: load })),
      status,
      page.items.length ? h('table', { class: 'parked' },
        h('thead', {}, h('tr', {}, [t('events.parkedAt'), t('events.event'), 'ce-id', t('events.subject'), t('events.attempts'), t('events.reason')].map((x) => h('th', { text: x })))),
        h('tbody', {}, page.items.map((p) => h('tr', { 'data-ce-id': p.ceId, 'data-key': p.eventKey },
          h('td', { text: when(p.parkedAt) }),
          h('td', {}, h('code', { text: p.eventKey })),
          h('td', {}, h('code', { text: p.ceId })),
          h('td', {}, h('code', { text: p.subject })),
          h('td', { text: String(p.attempts) }),
          h('td', { class: 'reason', text: p.reason || '—' })))))
        : h('p', { class: 'muted', text: t('events.noParked') }));
  }
  return { card, load };
}

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
  const parked = can('streaming:admin') ? parkedCard() : null;
  replace(main, h('h1', { text: t('events.title') }), parked ? parked.card : null, wire,
    h('section', { class: 'card' }, h('h2', { text: `${t('events.manifest')} (${m.version})` }),
      h('table', {}, h('thead', {}, h('tr', {}, ['key', t('events.type'), t('events.profile'), t('templates.description'), t('events.schema')].map((x) => h('th', { text: x })))),
        h('tbody', {}, m.events.map((e) => h('tr', {},
          h('td', {}, h('code', { text: e.key })), h('td', { text: e.ceType }), h('td', {}, badge(e.deliveryProfile)), h('td', { text: e.description }),
          h('td', {}, h('details', {}, h('summary', { text: t('events.schema') }), h('pre', { class: 'output', text: JSON.stringify(e.payloadSchema, null, 2) })))))))));
  await Promise.all([deliveries(), parked ? parked.load() : null]);
}
