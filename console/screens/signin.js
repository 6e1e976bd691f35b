// Sign-in: an "Access token" field; the run's development token is offered when the server
// gives it (memory mode, loopback clients only: GET /console/dev-token).
import { api, can, setToken, clearToken } from '../api.js';
import { t } from '../i18n.js';
import { h, replace, field } from '../dom.js';
import { go } from '../app.js';

async function devToken() {
  try {
    const r = await fetch('/console/dev-token', { headers: { Accept: 'application/json' } });
    if (r.status !== 200) return null; // 204: no token offered here
    return (await r.json()).token || null;
  } catch {
    return null;
  }
}

// One cheap read per scope: the token is checked with a call its scopes allow (a 403 would
// prove it valid too, but would put an error in the browser's console).
const PROBES = [
  ['templates:read', '/v1/templates', { limit: 1 }],
  ['reports:read', '/v1/reports', { limit: 1 }],
  ['deadlines:read', '/v1/deadlines', { limit: 1 }],
  ['data-sources:read', '/v1/data-sources'],
  ['metrics:read', '/v1/metrics'],
  ['streaming:read', '/v1/streaming/events'],
];

async function signIn(value, msg) {
  setToken(value);
  const [, path, query] = PROBES.find(([scope]) => can(scope)) || PROBES[0];
  try {
    await api('GET', path, { query, noSignOut: true });
  } catch (e) {
    if (e.status === 401) {
      clearToken();
      replace(msg, t('signin.bad'), ' ', e.message || '');
      return;
    }
  }
  go('overview');
}

export async function render(main) {
  const input = h('input', { type: 'password', autocomplete: 'off', spellcheck: 'false', required: true });
  const msg = h('p', { class: 'error', role: 'alert' });
  const form = h('form', {
    class: 'card narrow',
    onsubmit: (ev) => { ev.preventDefault(); if (input.value.trim()) signIn(input.value, msg); },
  },
  h('p', { text: t('signin.intro') }),
  field(t('signin.token'), input),
  h('button', { type: 'submit', class: 'primary', text: t('signin.submit') }),
  msg);
  replace(main, h('h1', { text: t('signin.title') }), form);
  const dev = await devToken();
  if (dev) {
    form.appendChild(h('div', { class: 'dev' },
      h('p', { class: 'muted', text: t('signin.devnote') }),
      h('button', { type: 'button', id: 'use-dev-token', text: t('signin.dev'), onclick: () => signIn(dev, msg) })));
  }
}
