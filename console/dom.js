// DOM construction from nodes only (no HTML parsing of strings): every value becomes a text node or an attribute, so
// nothing a server or a user wrote can become markup or script.

/**
 * h(tag, attrs, ...children): an element. attrs: `class`, `text` (textContent), `on<event>`
 * (a listener, never an inline handler attribute), booleans as present/absent, anything
 * else as an attribute. Children: nodes, strings (text nodes), arrays, null/false (skipped).
 */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === 'text') el.textContent = String(v);
    else if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else if (k === 'value') el.value = v;
    else if (k === 'checked' || k === 'selected' || k === 'disabled' || k === 'hidden') el[k] = !!v;
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  append(el, children);
  return el;
}

/** Appends children (nodes, strings, arrays; null/false skipped). */
export function append(el, children) {
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    el.appendChild(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

/** Removes every child of `el`, then appends `children`. */
export function replace(el, ...children) {
  el.replaceChildren();
  return append(el, children);
}

/** A labelled form control: <div class=field><label for=id>label</label>control</div>. */
let seq = 0;
export function field(label, control) {
  if (!control.id) control.id = `f${++seq}`;
  return h('div', { class: 'field' }, h('label', { for: control.id, text: label }), control);
}

/** A <select> of [value, label] pairs (or plain values). */
export function select(options, attrs = {}) {
  return h('select', attrs, options.map((o) => {
    const [value, label] = Array.isArray(o) ? o : [o, o];
    return h('option', { value, text: label, selected: attrs.value !== undefined && String(attrs.value) === String(value) });
  }));
}

/** A short-lived message in the status region. */
export function toast(message, kind = 'info') {
  const box = document.getElementById('toast');
  if (!box) return;
  const item = h('div', { class: `toast ${kind}`, text: message });
  box.appendChild(item);
  setTimeout(() => item.remove(), 5000);
}

/** A date-time shown in the user's locale (the raw value when it does not parse). */
export function when(iso) {
  if (!iso) return '—';
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? String(iso) : d.toLocaleString();
}

/** A status badge. */
export function badge(text, kind = String(text).toLowerCase()) {
  return h('span', { class: `badge b-${kind}`, text });
}

/** Calls `fn` `ms` after the last call. */
export function debounce(fn, ms) {
  let t;
  const d = (...a) => { clearTimeout(t); t = setTimeout(() => fn(...a), ms); };
  d.cancel = () => clearTimeout(t);
  return d;
}
