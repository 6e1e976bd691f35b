// Visual builder on the builder endpoints: blocks from blocks-config (labels in the chosen
// language), added, nested and reordered here; the generated code (generate-code) and the
// validation errors (validate) shown on their blocks; saved as a template. The server keeps
// only the generated code, so the blocks of a template saved here are kept in this browser
// (localStorage) to open it again.
import { api, can, uploadTemplate, updateTemplate, FORMATS } from '../api.js';
import { t } from '../i18n.js';
import { h, replace, field, select, toast, debounce } from '../dom.js';

const DIRECT = ['content', 'variable', 'iterator', 'collection', 'condition', 'expression', 'field', 'function', 'format', 'assignment', 'tagName', 'tagArgs', 'inline', 'trimWhitespace'];
let counter = 0;

/** A fresh block of `def` with an id. */
function newBlock(def) {
  counter += 1;
  const b = { blockId: `${def.type}-${Date.now().toString(36)}-${counter}`, type: def.type };
  if (def.acceptsChildren) b.children = [];
  return b;
}

/** Sets property `name` of block `b`: a top-level field of TemplateBlock, else `properties`. */
function setProp(b, name, value) {
  const empty = value === '' || value === null || value === undefined;
  if (DIRECT.includes(name)) {
    if (empty) delete b[name]; else b[name] = value;
  } else {
    b.properties = b.properties || {};
    if (empty) delete b.properties[name]; else b.properties[name] = value;
    if (!Object.keys(b.properties).length) delete b.properties;
  }
}

function getProp(b, name) {
  return DIRECT.includes(name) ? b[name] : (b.properties || {})[name];
}

/** Strips the console's own keys before sending blocks to the API. */
function clean(blocks) {
  return blocks.map((b) => {
    const c = { ...b };
    if (c.children) c.children = clean(c.children);
    return c;
  });
}

export async function render(main, params) {
  const [config, filters] = await Promise.all([
    api('GET', '/v1/templates/blocks-config'),
    api('GET', '/v1/templates/filters').catch(() => ({ filters: [] })),
  ]);
  const defs = Object.fromEntries(config.blocks.map((d) => [d.type, d]));
  const reopened = params.id ? JSON.parse(localStorage.getItem(`reporter.console.blocks.${params.id}`) || 'null') : null;
  const state = { blocks: reopened ? reopened.blocks : [], target: null, errors: [], templateId: reopened ? params.id : null };
  const format = select(FORMATS.filter((f) => f !== 'pdf').concat('pdf'), { value: reopened ? reopened.format : 'html', id: 'builder-format' });
  const palette = select(config.blocks.map((d) => [d.type, `${d.label} (${d.category})`]), { id: 'builder-type' });
  const tree = h('div', { class: 'blocks', id: 'builder-blocks' });
  const code = h('pre', { class: 'output', id: 'builder-code', 'aria-live': 'polite' });
  const verdict = h('p', { id: 'builder-verdict', role: 'status' });
  const target = h('p', { class: 'muted' });
  const desc = h('input', { type: 'text', value: reopened ? reopened.description : '' });
  const msg = h('p', { class: 'error', role: 'alert' });
  const can_write = can('templates:write');

  const refresh = debounce(async () => {
    if (!can_write) return;
    const body = { blocks: clean(state.blocks), format: format.value };
    try {
      const v = await api('POST', '/v1/templates/validate', { json: body });
      state.errors = v.errors || [];
      verdict.textContent = v.valid ? t('builder.valid') : t('builder.invalid', { n: state.errors.length });
      verdict.className = v.valid ? 'ok' : 'error';
      if (v.valid && state.blocks.length) {
        const g = await api('POST', '/v1/templates/generate-code', { json: body });
        code.textContent = g.code;
      } else if (!state.blocks.length) code.textContent = '';
    } catch (e) {
      verdict.textContent = `${e.code || t('error')}: ${e.message}`;
      verdict.className = 'error';
    }
    draw(false);
  }, 300);

  function list(blocks) {
    return blocks.map((b, i) => blockCard(b, blocks, i));
  }

  function blockCard(b, siblings, i) {
    const def = defs[b.type] || { label: b.type, properties: [], acceptsChildren: false };
    const errs = state.errors.filter((e) => e.blockId === b.blockId || e.blockId.startsWith(`${b.blockId}-filter-`));
    const props = (def.properties || []).filter((p) => p.type !== 'block[]').map((p) => {
      const val = getProp(b, p.name);
      let input;
      if (p.type === 'boolean') {
        input = h('input', { type: 'checkbox', checked: !!val });
        input.addEventListener('change', () => { setProp(b, p.name, input.checked || null); refresh(); });
      } else if (p.values && p.values.length) {
        input = select([['', '—'], ...p.values], { value: val ?? '' });
        input.addEventListener('change', () => { setProp(b, p.name, input.value); refresh(); });
      } else if (p.type === 'string[]') {
        input = h('input', { type: 'text', value: (val || []).join(', '), placeholder: 'a, b' });
        input.addEventListener('input', () => { const v = input.value.split(',').map((x) => x.trim()).filter(Boolean); setProp(b, p.name, v.length ? v : null); refresh(); });
      } else if (p.type.endsWith('[]')) {
        input = h('input', { type: 'text', value: val === undefined ? '' : JSON.stringify(val), placeholder: 'JSON' });
        input.addEventListener('change', () => { try { setProp(b, p.name, input.value ? JSON.parse(input.value) : null); input.removeAttribute('aria-invalid'); } catch { input.setAttribute('aria-invalid', 'true'); } refresh(); });
      } else {
        input = h('input', { type: 'text', value: val ?? '' });
        input.addEventListener('input', () => { setProp(b, p.name, input.value); refresh(); });
      }
      return field(`${p.name}${p.required ? ' *' : ''}`, input);
    });
    const move = (step) => { const j = i + step; if (j < 0 || j >= siblings.length) return; [siblings[i], siblings[j]] = [siblings[j], siblings[i]]; refresh(); draw(false); };
    return h('fieldset', { class: `block${errs.length ? ' invalid' : ''}${state.target === b ? ' target' : ''}`, 'data-block': b.blockId, 'data-type': b.type },
      h('legend', {}, `${def.label} `, h('code', { text: b.blockId })),
      h('div', { class: 'row' }, props),
      errs.map((e) => h('p', { class: 'error block-error', text: `${e.field ? `${e.field}: ` : ''}${e.message}` })),
      h('div', { class: 'actions' },
        h('button', { type: 'button', text: t('builder.up'), disabled: i === 0, onclick: () => move(-1) }),
        h('button', { type: 'button', text: t('builder.down'), disabled: i === siblings.length - 1, onclick: () => move(1) }),
        def.acceptsChildren ? h('button', { type: 'button', class: 'into', text: t('builder.addChild'), 'aria-pressed': String(state.target === b), onclick: () => { state.target = state.target === b ? null : b; draw(false); } }) : null,
        h('button', { type: 'button', class: 'danger', text: t('builder.remove'), onclick: () => { siblings.splice(i, 1); if (state.target === b) state.target = null; refresh(); draw(false); } })),
      def.acceptsChildren ? h('div', { class: 'children', 'aria-label': t('builder.children') }, list(b.children || (b.children = []))) : null);
  }

  function draw() {
    target.textContent = state.target ? t('builder.selected', { id: state.target.blockId }) : t('builder.root');
    replace(tree, state.blocks.length ? list(state.blocks) : h('p', { class: 'muted', text: t('builder.empty') }));
  }

  const add = h('button', {
    type: 'button', id: 'builder-add', class: 'primary', text: t('builder.add'), disabled: !can_write,
    onclick: () => {
      const b = newBlock(defs[palette.value]);
      (state.target ? state.target.children : state.blocks).push(b);
      refresh();
      draw();
    },
  });
  const save = h('button', {
    type: 'button', id: 'builder-save', class: 'primary', text: t('builder.saveAs'), disabled: !can_write,
    onclick: async () => {
      msg.textContent = '';
      try {
        const body = { blocks: clean(state.blocks), format: format.value };
        const g = await api('POST', '/v1/templates/generate-code', { json: body });
        const tpl = state.templateId ? await updateTemplate(state.templateId, g.code, desc.value) : await uploadTemplate(g.code, format.value, desc.value);
        localStorage.setItem(`reporter.console.blocks.${tpl.id}`, JSON.stringify({ blocks: state.blocks, format: format.value, description: desc.value }));
        state.templateId = tpl.id;
        toast(t('builder.saved'));
        main.dataset.savedTemplate = tpl.id;
      } catch (e) {
        msg.textContent = `${e.code || t('error')}: ${e.message}`;
      }
    },
  });
  format.addEventListener('change', refresh);
  const builtIds = Object.keys(localStorage).filter((k) => k.startsWith('reporter.console.blocks.')).map((k) => k.slice('reporter.console.blocks.'.length));
  const reopen = builtIds.length ? h('ul', { class: 'plain' }, builtIds.map((id) => {
    const info = JSON.parse(localStorage.getItem(`reporter.console.blocks.${id}`) || '{}');
    return h('li', {}, h('a', { href: `#/builder?id=${encodeURIComponent(id)}`, text: info.description || id }));
  })) : null;

  replace(main, h('h1', { text: t('builder.title') }),
    reopen ? h('section', { class: 'card' }, h('h2', { text: t('builder.reopen') }), reopen) : null,
    h('section', { class: 'card' }, h('div', { class: 'row' }, field(t('builder.palette'), palette), add, field(t('templates.format'), format)), target),
    h('div', { class: 'editor two' },
      h('section', { class: 'card', 'aria-label': t('builder.title') }, tree),
      h('section', { class: 'card', 'aria-label': t('builder.code') }, h('h2', { text: t('builder.code') }), verdict, code,
        h('div', { class: 'row' }, field(t('templates.description'), desc), save), msg,
        h('details', {}, h('summary', { text: 'Filters' }), h('ul', { class: 'plain' }, filters.filters.map((f) => h('li', {}, h('code', { text: f.name }), ' — ', f.description, ' ', h('code', { text: f.example }))))))));
  draw();
  refresh();

}
