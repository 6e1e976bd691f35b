// The two languages of the original (English, Portuguese): one dictionary per language in
// i18n/, the choice kept in this tab's sessionStorage.
import en from './i18n/en.js';
import pt from './i18n/pt.js';

const DICTS = { en, pt };
const KEY = 'reporter.console.lang';
let current = sessionStorage.getItem(KEY) || ((navigator.language || 'en').toLowerCase().startsWith('pt') ? 'pt' : 'en');

export function lang() { return current; }

export function setLang(l) {
  current = DICTS[l] ? l : 'en';
  sessionStorage.setItem(KEY, current);
  document.documentElement.lang = current === 'pt' ? 'pt-BR' : 'en';
}

/** The string `key` in the current language (English, then the key itself, as fallbacks),
 * with `{name}` placeholders replaced by `vars` (as text: the caller puts it in textContent). */
export function t(key, vars = {}) {
  const s = DICTS[current][key] ?? en[key] ?? key;
  return s.replace(/\{(\w+)\}/g, (_, k) => (vars[k] === undefined ? `{${k}}` : String(vars[k])));
}

export const LANGS = Object.keys(DICTS);
