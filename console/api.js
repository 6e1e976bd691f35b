// The API client: fetch with the bearer token kept in this tab's sessionStorage (never in a
// URL or a cookie), JSON in and out, errors as ApiError with the API's stable code.
import { lang } from './i18n.js';

const KEY = 'reporter.console.token';

export class ApiError extends Error {
  constructor(status, body) {
    super((body && body.message) || `HTTP ${status}`);
    this.status = status;
    this.code = body && body.code;
    this.body = body || {};
  }
}

export function token() { return sessionStorage.getItem(KEY); }
export function setToken(t) { sessionStorage.setItem(KEY, t.trim()); }
export function clearToken() { sessionStorage.removeItem(KEY); }

/** The token's claims (not verified here: the server verifies every call). */
export function claims() {
  const t = token();
  if (!t) return null;
  try {
    const part = t.split('.')[1].replace(/-/g, '+').replace(/_/g, '/');
    const json = decodeURIComponent(Array.from(atob(part), (c) => `%${c.charCodeAt(0).toString(16).padStart(2, '0')}`).join(''));
    return JSON.parse(json);
  } catch {
    return null;
  }
}

/** The token's scopes. A token without a `scope` claim is shown everything; the API decides. */
export function scopes() {
  const c = claims();
  if (!c || typeof c.scope !== 'string') return null;
  return new Set(c.scope.split(/\s+/).filter(Boolean));
}

/** Whether the token holds `scope`. */
export function can(scope) {
  const s = scopes();
  return s === null || s.has(scope);
}

/**
 * api(method, path, {json, form, query, raw}): the answer's JSON (or the Response when
 * `raw`). 401 signs out; any other non-2xx throws ApiError.
 */
export async function api(method, path, opts = {}) {
  const headers = { 'Accept-Language': lang() === 'pt' ? 'pt-BR' : 'en' };
  const t = token();
  if (t) headers.Authorization = `Bearer ${t}`;
  let body;
  if (opts.json !== undefined) {
    headers['Content-Type'] = 'application/json';
    body = JSON.stringify(opts.json);
  } else if (opts.form) {
    body = opts.form;
  }
  let url = path;
  if (opts.query) {
    const q = new URLSearchParams();
    for (const [k, v] of Object.entries(opts.query)) if (v !== undefined && v !== null && v !== '') q.set(k, v);
    const s = q.toString();
    if (s) url += `?${s}`;
  }
  const resp = await fetch(url, { method, headers, body });
  if (resp.status === 401 && !opts.noSignOut) {
    clearToken();
    window.dispatchEvent(new CustomEvent('reporter:signed-out'));
  }
  if (!resp.ok) {
    let err = null;
    try { err = await resp.json(); } catch { /* not JSON */ }
    throw new ApiError(resp.status, err);
  }
  if (opts.raw) return resp;
  if (resp.status === 204) return null;
  const type = resp.headers.get('content-type') || '';
  return type.includes('json') ? resp.json() : resp.text();
}

/** Saves a Blob as a file (a temporary blob: URL and a download link). */
export function saveBlob(blob, name) {
  const url = URL.createObjectURL(blob);
  const a = document.createElement('a');
  a.href = url;
  a.download = name;
  document.body.appendChild(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10000);
}

/** The file name of a Content-Disposition header, else `fallback`. */
export function dispositionName(resp, fallback) {
  const cd = resp.headers.get('content-disposition') || '';
  const m = /filename\*?=(?:UTF-8'')?"?([^";]+)"?/i.exec(cd);
  return m ? decodeURIComponent(m[1]) : fallback;
}

/** The line (and column) an error names, from its message or fields, or null. */
export function errorLine(e) {
  const texts = [];
  if (e && e.body) {
    if (typeof e.body.line === 'number') return { line: e.body.line, column: e.body.column || null };
    texts.push(e.body.message || '');
    for (const v of Object.values(e.body.fields || {})) texts.push(String(v));
  }
  if (e && e.message) texts.push(e.message);
  for (const t of texts) {
    const m = /line\s*:?\s*(\d+)(?:\D{1,12}col(?:umn)?\s*:?\s*(\d+))?/i.exec(t);
    if (m) return { line: Number(m[1]), column: m[2] ? Number(m[2]) : null };
  }
  return null;
}

/** Keeps the source of a template this tab uploaded or saved, so the editor opens it without
 * another call. */
export function rememberSource(id, text) {
  try { sessionStorage.setItem(`reporter.console.source.${id}`, text); } catch { /* full */ }
}

/** The source this tab kept for template `id`, or null. */
export function rememberedSource(id) {
  return sessionStorage.getItem(`reporter.console.source.${id}`);
}

/** The source of template `id`: the one this tab kept, else GET /v1/templates/{id}/source. */
export async function templateSource(id) {
  const kept = rememberedSource(id);
  if (kept !== null) return kept;
  const text = await api('GET', `/v1/templates/${encodeURIComponent(id)}/source`);
  rememberSource(id, text);
  return text;
}

/** Uploads `text` as a new template (multipart, as `POST /v1/templates` takes it). */
export function uploadTemplate(text, format, description) {
  const form = new FormData();
  form.append('template', new Blob([text], { type: 'text/plain' }), 'template.tpl');
  form.append('outputFormat', format);
  if (description) form.append('description', description);
  return api('POST', '/v1/templates', { form }).then((tpl) => { rememberSource(tpl.id, text); return tpl; });
}

/** Replaces the file (and description) of template `id`. */
export function updateTemplate(id, text, description) {
  const form = new FormData();
  form.append('template', new Blob([text], { type: 'text/plain' }), 'template.tpl');
  if (description) form.append('description', description);
  return api('PATCH', `/v1/templates/${encodeURIComponent(id)}`, { form }).then((tpl) => { rememberSource(tpl.id, text); return tpl; });
}

export const FORMATS = ['html', 'pdf', 'csv', 'xml', 'txt'];
