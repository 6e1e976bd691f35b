// Light syntax highlighting of template sources, done safely: the source is split into
// tokens and each becomes a text node inside a <span>; nothing is ever parsed as HTML.
import { h } from './dom.js';

const TOKEN = /(\{%-?[\s\S]*?-?%\})|(\{\{-?[\s\S]*?-?\}\})|(\{#[\s\S]*?#\})|(<\/?[A-Za-z][^>]*>)/g;

/** A <pre><code> of `source` with its tags, outputs, comments and markup in spans, and a line
 * number in front of each line. */
export function highlighted(source) {
  const code = h('code', {});
  let last = 0;
  for (const m of source.matchAll(TOKEN)) {
    if (m.index > last) code.appendChild(document.createTextNode(source.slice(last, m.index)));
    const kind = m[1] ? 'tk-tag' : m[2] ? 'tk-out' : m[3] ? 'tk-comment' : 'tk-markup';
    code.appendChild(h('span', { class: kind, text: m[0] }));
    last = m.index + m[0].length;
  }
  if (last < source.length) code.appendChild(document.createTextNode(source.slice(last)));
  const lines = source.split('\n').length;
  const gutter = h('span', { class: 'gutter', 'aria-hidden': 'true', text: Array.from({ length: lines }, (_, i) => i + 1).join('\n') });
  return h('pre', { class: 'source', tabindex: '0' }, gutter, code);
}
