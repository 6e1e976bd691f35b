// Sign-in: an "Access token" field; the run's development token is offered when the server
// gives it (memory mode, loopback clients only: GET /console/dev-token).
import { api, setToken, clearToken } from '../api.js';
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

async function signIn(value, msg) {
  setToken(value);
  try {
    await api('GET', '/v1/templates', { query: { limit: 1 }, noSignOut: true });
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
