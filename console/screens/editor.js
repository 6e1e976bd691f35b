// Template editor with live preview: the source on the left, the output of
// POST /v1/templates/preview (debounced) in the middle, the data-source schema on the right
// (a click inserts the field at the cursor). HTML previews in a sandboxed frame that cannot
// run script, CSV as a table, XML/TXT as text, PDF in an <object> from a blob: URL.
import { api, can, uploadTemplate, updateTemplate, templateSource, errorLine, FORMATS } from '../api.js';
import { t } from '../i18n.js';
import { h, replace, field, select, toast, debounce } from '../dom.js';
import { go } from '../app.js';

/** Parses CSV (quotes, doubled quotes, CRLF) into rows. */
export function parseCsv(text) {
  const rows = [];
  let row = [];
  let cell = '';
  let quoted = false;
  for (let i = 0; i < text.length; i += 1) {
    const c = text[i];
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') { cell += '"'; i += 1; } else if (c === '"') quoted = false; else cell += c;
    } else if (c === '"') quoted = true;
    else if (c === ',' || c === ';') { row.push(cell); cell = ''; }
    else if (c === '\n') { row.push(cell.replace(/\r$/, '')); rows.push(row); row = []; cell = ''; }
    else cell += c;
  }
  if (cell !== '' || row.length) { row.push(cell); rows.push(row); }
  return rows;
}

function csvTable(text) {
  const rows = parseCsv(text).slice(0, 1000);
  if (!rows.length) return h('p', { class: 'muted', text: '—' });
  const [head, ...body] = rows;
  return h('table', { class: 'csv' },
    h('thead', {}, h('tr', {}, head.map((c) => h('th', { scope: 'col', text: c })))),
    h('tbody', {}, body.map((r) => h('tr', {}, r.map((c) => h('td', { text: c }))))));
}

let pdfUrl = null;

/** The preview pane's content for answer `r` of `format`. */
function output(r, format) {
  if (pdfUrl) { URL.revokeObjectURL(pdfUrl); pdfUrl = null; }
  if (format === 'pdf' && r.outputBase64) {
    const bytes = Uint8Array.from(atob(r.outputBase64), (c) => c.charCodeAt(0));
    pdfUrl = URL.createObjectURL(new Blob([bytes], { type: 'application/pdf' }));
    return h('object', { data: pdfUrl, type: 'application/pdf', class: 'frame', 'aria-label': t('editor.preview') }, h('a', { href: pdfUrl, download: 'preview.pdf', text: 'preview.pdf' }));
  }
  const text = r.output ?? '';
  if (format === 'html') {
    // sandbox="" : no script, no same origin, no forms, no navigation of the console.
    return h('iframe', { sandbox: '', srcdoc: text, class: 'frame', title: t('editor.preview') });
  }
  if (format === 'csv') return csvTable(text);
  return h('pre', { class: 'output', text });
}

function schemaTree(onPick) {
  const box = h('div', { class: 'schema' }, h('p', { class: 'muted', text: t('loading') }));
  if (!can('data-sources:read')) { replace(box, h('p', { class: 'muted', text: t('noscope', { scope: 'data-sources:read' }) })); return box; }
  api('GET', '/v1/data-sources').then(async (list) => {
    const details = await Promise.all(list.map((ds) => api('GET', `/v1/data-sources/${encodeURIComponent(ds.id)}`).catch(() => ({ ...ds, tables: [] }))));
    replace(box, details.map((ds) => h('details', { open: details.length === 1 },
      h('summary', { text: `${ds.id} (${ds.type})` }),
      (ds.tables || []).map((tb) => h('details', {},
        h('summary', { text: tb.name }),
        h('ul', { class: 'plain' }, tb.fields.map((f) => h('li', {}, h('button', {
          type: 'button', class: 'link field-insert', 'data-field': `${ds.id}.${tb.name}.${f}`,
          'aria-label': t('editor.insert', { field: `${ds.id}.${tb.name}.${f}` }), text: f,
          onclick: () => onPick(ds.id, tb.name, f),
        })))))))));
  }).catch((e) => replace(box, h('p', { class: 'error', text: e.message })));
  return box;
}

/** Selects line `line` (1-based) of the textarea and scrolls to it. */
function showLine(area, line) {
  const lines = area.value.split('\n');
  const start = lines.slice(0, line - 1).reduce((n, l) => n + l.length + 1, 0);
  const end = start + (lines[line - 1] || '').length;
  area.setSelectionRange(start, end);
  const lh = parseFloat(getComputedStyle(area).lineHeight) || 18;
  area.scrollTop = Math.max(0, (line - 3) * lh);
}

export async function render(main, params) {
  const id = params.id || '';
  let tpl = null;
  if (id) tpl = await api('GET', `/v1/templates/${encodeURIComponent(id)}`);
  const area = h('textarea', { id: 'source', class: 'code', spellcheck: 'false', rows: '24', wrap: 'off' });
  area.value = id ? await templateSource(id) : '';
  const format = select(FORMATS, { value: tpl ? tpl.outputFormat : 'html', disabled: !!tpl });
  const desc = h('input', { type: 'text', value: tpl ? tpl.description : '', maxlength: '1000' });
  const limit = h('input', { type: 'number', min: '1', max: '1000', value: '50' });
  const status = h('p', { class: 'muted', id: 'preview-status', 'aria-live': 'polite' });
  const problems = h('div', { id: 'preview-errors', role: 'alert' });
  const pane = h('div', { class: 'preview', id: 'preview' });
  const saveMsg = h('p', { class: 'error', role: 'alert' });
  let seq = 0;

  const preview = debounce(async () => {
    const mine = ++seq;
    if (!area.value.trim()) { replace(pane); replace(problems); status.textContent = ''; return; }
    try {
      const r = await api('POST', '/v1/templates/preview', { json: { template: area.value, outputFormat: format.value, filters: {}, limit: Number(limit.value) || 50 } });
      if (mine !== seq) return;
      status.textContent = t('editor.status', { status: r.status });
      main.dataset.previewStatus = r.status;
      const notes = [];
      if (r.truncated) notes.push(h('p', { class: 'muted', text: t('editor.truncated') }));
      if (r.errorCode && !r.error) notes.push(h('p', { class: 'error', text: r.errorCode }));
      if (r.error) {
        const base = typeof r.error === 'string' ? r.error : (r.error.message || JSON.stringify(r.error));
        const msg = `${r.errorCode ? `${r.errorCode}: ` : ''}${base}${r.error.cause ? ` (${r.error.cause})` : ''}`;
        notes.push(h('p', { class: 'error', text: r.error.line ? t('editor.lineError', { line: r.error.line, message: msg }) : msg }));
        if (r.error.line) showLine(area, r.error.line);
      }
      for (const [ds, s] of Object.entries(r.sections || {})) {
        if (!s.ok) notes.push(h('p', { class: 'error', text: `${ds}: ${s.errorCode || t('reports.failed')}` }));
      }
      replace(problems, notes);
      replace(pane, output(r, format.value));
    } catch (e) {
      if (mine !== seq) return;
      if (e.status === 404 || e.status === 405) {
        status.textContent = t('editor.previewOff');
        main.dataset.previewStatus = 'unavailable';
        return;
      }
      main.dataset.previewStatus = 'invalid';
      const at = errorLine(e);
      const msg = `${e.code || t('error')}: ${e.message}${e.body.fields && e.body.fields.template ? ` — ${e.body.fields.template}` : ''}`;
      replace(problems, h('p', { class: 'error', text: at ? t('editor.lineError', { line: at.column ? `${at.line}:${at.column}` : at.line, message: msg }) : msg }));
      if (at) showLine(area, at.line);
    }
  }, 500);

  area.addEventListener('input', preview);
  format.addEventListener('change', preview);
  limit.addEventListener('change', preview);

  const insert = (ds, tb, f) => {
    const text = `{{ ${ds}.${tb}.0.${f} }}`;
    const s = area.selectionStart ?? area.value.length;
    area.setRangeText(text, s, area.selectionEnd ?? s, 'end');
    area.focus();
    preview();
  };

  const save = h('button', {
    type: 'button', class: 'primary', id: 'editor-save', text: tpl ? t('editor.saveExisting') : t('editor.saveNew'),
    onclick: async () => {
      saveMsg.textContent = '';
      try {
        const saved = tpl ? await updateTemplate(tpl.id, area.value, desc.value) : await uploadTemplate(area.value, format.value, desc.value);
        toast(t('editor.saved'));
        if (!tpl) go('editor', { id: saved.id });
      } catch (e) {
        const at = errorLine(e);
        saveMsg.textContent = `${e.code || t('error')}: ${e.message}${at ? ` (${t('editor.lineError', { line: at.line, message: '' })})` : ''}`;
        if (at) showLine(area, at.line);
      }
    },
  });

  replace(main, h('h1', { text: tpl ? `${t('editor.title')}: ${tpl.description || tpl.id}` : t('editor.title') }),
    h('div', { class: 'row' }, field(t('templates.format'), format), field(t('templates.description'), desc), field(t('editor.rows'), limit), save),
    saveMsg,
    h('div', { class: 'editor' },
      h('section', { class: 'card', 'aria-label': t('editor.source') }, field(t('editor.source'), area)),
      h('section', { class: 'card', 'aria-label': t('editor.preview') }, h('h2', { text: t('editor.preview') }), status, problems, pane),
      h('aside', { class: 'card', 'aria-label': t('editor.schema') }, h('h2', { text: t('editor.schema') }), schemaTree(insert))));
  preview();
  return () => preview.cancel();
}
