// The shell: navigation filtered by the token's scopes, the language switch, and a tiny
// router on location.hash (#/screen?key=value). Each screen is one ES module exporting
// `render(main, params)`, which may return a function that stops its timers.
import { can, token, clearToken } from './api.js';
import { t, lang, setLang } from './i18n.js';
import { h, replace } from './dom.js';

const SCREENS = {
  signin: { load: () => import('./screens/signin.js') },
  overview: { load: () => import('./screens/overview.js'), nav: 'nav.overview', scope: null },
  templates: { load: () => import('./screens/templates.js'), nav: 'nav.templates', scope: 'templates:read' },
  editor: { load: () => import('./screens/editor.js'), nav: 'nav.editor', scope: 'templates:write' },
  builder: { load: () => import('./screens/builder.js'), nav: 'nav.builder', scope: 'templates:read' },
  reports: { load: () => import('./screens/reports.js'), nav: 'nav.reports', scope: 'reports:read' },
  deadlines: { load: () => import('./screens/deadlines.js'), nav: 'nav.deadlines', scope: 'deadlines:read' },
  datasources: { load: () => import('./screens/datasources.js'), nav: 'nav.datasources', scope: 'data-sources:read' },
  events: { load: () => import('./screens/events.js'), nav: 'nav.events', scope: 'streaming:read' },
};

let stop = null;

/** The route of the current hash: [screen, params]. */
function route() {
  const [path, query] = location.hash.replace(/^#\/?/, '').split('?');
  const params = Object.fromEntries(new URLSearchParams(query || ''));
  return [path || 'overview', params];
}

/** Goes to `screen` with `params`. */
export function go(screen, params = {}) {
  const q = new URLSearchParams(params).toString();
  const target = `#/${screen}${q ? `?${q}` : ''}`;
  if (location.hash === target) render();
  else location.hash = target;
}

function renderNav(current) {
  const nav = document.getElementById('nav');
  const signedIn = !!token();
  document.getElementById('signout').hidden = !signedIn;
  document.getElementById('signout').textContent = t('signout');
  document.querySelector('.skip').textContent = t('skip');
  if (!signedIn) {
    replace(nav);
    return;
  }
  replace(nav, h('ul', {}, Object.entries(SCREENS)
    .filter(([, s]) => s.nav && (!s.scope || can(s.scope)))
    .map(([name, s]) => h('li', {}, h('a', {
      href: `#/${name}`,
      text: t(s.nav),
      'aria-current': name === current ? 'page' : null,
    })))));
}

async function render() {
  if (stop) { stop(); stop = null; }
  let [screen, params] = route();
  if (!token()) screen = 'signin';
  else if (screen === 'signin') screen = 'overview';
  const def = SCREENS[screen] || SCREENS.overview;
  renderNav(screen);
  const main = document.getElementById('main');
  // A screen's data-* marks (which screen, what it loaded) never outlive it.
  for (const k of Object.keys(main.dataset)) delete main.dataset[k];
  replace(main, h('p', { text: t('loading') }));
  document.title = `Reporter Console — ${t(def.nav || 'signin.title')}`;
  if (def.scope && !can(def.scope)) {
    replace(main, h('h1', { text: t(def.nav) }), h('p', { class: 'error', text: t('noscope', { scope: def.scope }) }));
    return;
  }
  const mod = await def.load();
  const r = await mod.render(main, params);
  if (typeof r === 'function') stop = r;
  main.dataset.screen = screen;
  main.setAttribute('aria-busy', 'false');
}

function start() {
  const langSel = document.getElementById('lang');
  setLang(lang());
  langSel.value = lang();
  langSel.addEventListener('change', () => { setLang(langSel.value); render(); });
  document.getElementById('signout').addEventListener('click', () => { clearToken(); go('signin'); });
  window.addEventListener('hashchange', render);
  window.addEventListener('reporter:signed-out', () => go('signin'));
  render();
}

start();
