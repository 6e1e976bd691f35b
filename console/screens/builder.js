// Visual builder on the builder endpoints: blocks from blocks-config (labels in the chosen
// language), added, nested and reordered here (buttons for the keyboard, drag and drop for
// the mouse); the generated code (generate-code) and the validation errors (validate) shown
// on their blocks; saved as a template. The blocks travel in the template's own source, in
// one comment after the generated code (builder_marker.js), so a builder-made template
// reopens as blocks in any browser.
import { api, can, uploadTemplate, updateTemplate, FORMATS } from '../api.js';
import { t } from '../i18n.js';
import { h, replace, field, select, toast, debounce } from '../dom.js';
import { readBlocks, withBlocks, MarkerError } from '../builder_marker.js';

// `counterMode` and `counterNames` live in a block's `properties` object (as in the
// original); every other property is a field of the block (blocks-config's contract).
const IN_PROPERTIES = ['counterMode', 'counterNames'];
// Properties edited by their own controls, not as a text field.
const OWN_CONTROLS = ['children', 'elseChildren', 'elifBranches', 'filters'];
let counter = 0;

/** A fresh block of `def` with an id. */
function newBlock(def) {
  counter += 1;
  const b = { blockId: `${def.type}-${Date.now().toString(36)}-${counter}`, type: def.type };
  if (def.acceptsChildren) b.children = [];
  return b;
}

/** Sets property `name` of block `b`: a field of the block, or of `properties`. */
function setProp(b, name, value) {
  const empty = value === '' || value === null || value === undefined;
  if (!IN_PROPERTIES.includes(name)) {
    if (empty) delete b[name]; else b[name] = value;
  } else {
    b.properties = b.properties || {};
    if (empty) delete b.properties[name]; else b.properties[name] = value;
    if (!Object.keys(b.properties).length) delete b.properties;
  }
}

function getProp(b, name) {
  return IN_PROPERTIES.includes(name) ? (b.properties || {})[name] : b[name];
}

/** The blocks as the API takes them: copies, without the empty optional lists. */
function clean(blocks) {
  return blocks.map((b) => {
    const c = { ...b };
    if (c.children) c.children = clean(c.children);
    if (c.elseChildren) c.elseChildren = clean(c.elseChildren);
    if (c.elifBranches) c.elifBranches = c.elifBranches.map((e) => ({ ...e, children: clean(e.children || []) }));
    if (c.filters) c.filters = c.filters.map((f) => ({ ...f }));
    for (const k of ['elseChildren', 'elifBranches', 'filters']) if (Array.isArray(c[k]) && !c[k].length) delete c[k];
    return c;
  });
}

/** Every block list inside block `b` (its children, else and elif branches), deeply. */
function listsInside(b) {
  const own = [b.children, b.elseChildren, ...(b.elifBranches || []).map((e) => e.children)].filter(Array.isArray);
  return own.concat(...own.map((l) => l.flatMap(listsInside)));
}

export async function render(main, params) {
  const [config, filters] = await Promise.all([
    api('GET', '/v1/templates/blocks-config'),
    api('GET', '/v1/templates/filters').catch(() => ({ filters: [] })),
  ]);
  const defs = Object.fromEntries(config.blocks.map((d) => [d.type, d]));
  const can_write = can('templates:write');
  const notice = h('div', { id: 'builder-notice', role: 'status' });

  // Reopening: the blocks the template's source carries (GET …/source, whatever this browser
  // kept), or the reason they cannot be used, with the code shown instead.
  let reopened = null;
  if (params.id) {
    let source = null;
    try {
      source = await api('GET', `/v1/templates/${encodeURIComponent(params.id)}/source`);
      reopened = readBlocks(source);
      if (!reopened) throw new MarkerError('builder.markerNone');
      replace(notice, h('p', { class: 'ok', text: t('builder.reopened', { name: reopened.description || params.id }) }));
    } catch (e) {
      reopened = null;
      const text = e instanceof MarkerError ? t(e.reason, { detail: e.detail }) : `${e.code || t('error')}: ${e.message}`;
      replace(notice, h('p', { class: 'error', id: 'builder-reopen-error', text }),
        source !== null ? h('details', { open: true }, h('summary', { text: t('builder.itsCode') }), h('pre', { class: 'output', id: 'builder-reopen-code', text: source })) : null,
        source !== null && can_write ? h('p', {}, h('a', { href: `#/editor?id=${encodeURIComponent(params.id)}`, text: t('builder.openInEditor') })) : null);
    }
  }

  const state = { blocks: reopened ? reopened.blocks : [], target: null, errors: [], templateId: reopened ? params.id : null, drag: null };
  const format = select(FORMATS.filter((f) => f !== 'pdf').concat('pdf'), { value: reopened ? reopened.format : 'html', id: 'builder-format' });
  const palette = select(config.blocks.map((d) => [d.type, `${d.label} (${d.category})`]), { id: 'builder-type' });
  const tree = h('div', { class: 'blocks', id: 'builder-blocks' });
  const code = h('pre', { class: 'output', id: 'builder-code', 'aria-live': 'polite' });
  const verdict = h('p', { id: 'builder-verdict', role: 'status' });
  const target = h('p', { class: 'muted' });
  const desc = h('input', { type: 'text', value: reopened ? reopened.description : '' });
  const msg = h('p', { class: 'error', role: 'alert' });

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
    showErrors();
  }, 300);

  const changed = () => { refresh(); draw(); };

  /** The validation errors of block `id` (its filters' and elif branches' included). */
  const errorsOf = (id) => state.errors.filter((e) => e.blockId === id || e.blockId.startsWith(`${id}-filter-`) || e.blockId.startsWith(`${id}-elif-`));
  const errorLines = (errs) => errs.map((e) => h('p', { class: 'error block-error', text: `${e.field ? `${e.field}: ` : ''}${e.message}` }));

  /** Puts the last validation's errors on their blocks in place: the cards are not rebuilt,
   * so a click or the typing under way is never lost to a redraw. */
  function showErrors() {
    for (const card of tree.querySelectorAll('fieldset.block')) {
      const errs = errorsOf(card.dataset.block);
      card.classList.toggle('invalid', errs.length > 0);
      const box = [...card.children].find((c) => c.classList.contains('block-errors'));
      if (box) replace(box, errorLines(errs));
    }
  }

  /** Moves the dragged block into `list` at `index` (unless that would put it inside itself). */
  function dropInto(list, index) {
    const d = state.drag;
    state.drag = null;
    if (!d || listsInside(d.block).includes(list)) return;
    const from = d.list.indexOf(d.block);
    if (from < 0) return;
    d.list.splice(from, 1);
    const at = d.list === list && from < index ? index - 1 : index;
    list.splice(Math.max(0, Math.min(at, list.length)), 0, d.block);
    changed();
  }

  const clearMarks = () => tree.querySelectorAll('.drop-before, .drop-after, .drop-into').forEach((el) => el.classList.remove('drop-before', 'drop-after', 'drop-into'));

  /** A block list (the top level, a block's children, an else or elif branch): its cards, and
   * a drop zone for the mouse (dropping between cards inserts there, below them appends). */
  function listBox(list, id, label) {
    const box = h('div', {
      class: 'children', role: 'group', 'data-list': id, 'aria-label': label,
      ondragover: (e) => {
        if (!state.drag || e.target !== box || listsInside(state.drag.block).includes(list)) return;
        e.preventDefault();
        e.stopPropagation();
        clearMarks();
        box.classList.add('drop-into');
      },
      ondragleave: (e) => { if (e.target === box) box.classList.remove('drop-into'); },
      ondrop: (e) => {
        if (e.target !== box) return;
        e.preventDefault();
        e.stopPropagation();
        clearMarks();
        // Between two cards: before the first card whose middle is below the pointer.
        const cards = [...box.children].filter((c) => c.matches('fieldset.block'));
        const at = cards.findIndex((c) => { const r = c.getBoundingClientRect(); return e.clientY < r.top + r.height / 2; });
        dropInto(list, at < 0 ? list.length : at);
      },
    }, list.map((b, i) => blockCard(b, list, i)));
    return box;
  }

  /** "Add inside" for a block list (new blocks go there). */
  function intoButton(list, id) {
    const on = state.target && state.target.list === list;
    return h('button', {
      type: 'button', class: 'into', text: t('builder.addChild'), 'aria-pressed': String(!!on), 'data-key': `${id}:into`,
      onclick: () => { state.target = on ? null : { list, id }; draw(); },
    });
  }

  /** The filters of a variable: a row per filter (name, argument, remove) and "Add filter". */
  function filtersForm(b) {
    const list = b.filters || [];
    const names = filters.filters.map((f) => [f.name, f.name]);
    return h('fieldset', { class: 'filter' }, h('legend', { text: t('builder.filters') }),
      list.map((f, i) => {
        const name = select([['', '—'], ...names], { value: f.name ?? '', 'data-key': `${b.blockId}:filter-${i}:name` });
        name.addEventListener('change', () => { f.name = name.value || undefined; refresh(); });
        const args = h('input', { type: 'text', value: f.args ?? '', 'data-key': `${b.blockId}:filter-${i}:args` });
        args.addEventListener('input', () => { if (args.value) f.args = args.value; else delete f.args; refresh(); });
        return h('div', { class: 'row' }, field(t('builder.filterName', { n: i + 1 }), name), field(t('builder.filterArgs', { n: i + 1 }), args),
          h('button', { type: 'button', class: 'danger', text: t('builder.removeFilter', { n: i + 1 }), onclick: () => { list.splice(i, 1); if (!list.length) delete b.filters; changed(); } }));
      }),
      h('button', { type: 'button', text: t('builder.addFilter'), onclick: () => { b.filters = list; list.push({ name: names.length ? names[0][0] : '' }); changed(); } }));
  }

  /** The elif branches and the else of a conditional: a condition and a block list each. */
  function branchesForm(b) {
    const elifs = b.elifBranches || [];
    b.elseChildren = b.elseChildren || [];
    return h('div', { class: 'branches' },
      elifs.map((e, n) => {
        e.children = e.children || [];
        const id = `${b.blockId}-elif-${n}`;
        const cond = h('input', { type: 'text', value: e.condition ?? '', 'data-key': `${id}:condition` });
        cond.addEventListener('input', () => { if (cond.value) e.condition = cond.value; else delete e.condition; refresh(); });
        return h('fieldset', { class: 'branch', 'data-branch': id }, h('legend', { text: t('builder.elif', { n: n + 1 }) }),
          field(t('builder.elifCondition', { n: n + 1 }), cond),
          h('div', { class: 'actions' }, intoButton(e.children, id),
            h('button', { type: 'button', class: 'danger', text: t('builder.removeElif', { n: n + 1 }), onclick: () => { elifs.splice(n, 1); if (!elifs.length) delete b.elifBranches; if (state.target && state.target.list === e.children) state.target = null; changed(); } })),
          listBox(e.children, id, t('builder.elif', { n: n + 1 })));
      }),
      h('button', { type: 'button', text: t('builder.addElif'), onclick: () => { b.elifBranches = elifs; elifs.push({ condition: '', children: [] }); changed(); } }),
      h('fieldset', { class: 'branch', 'data-branch': `${b.blockId}-else` }, h('legend', { text: t('builder.else') }),
        h('div', { class: 'actions' }, intoButton(b.elseChildren, `${b.blockId}-else`)),
        listBox(b.elseChildren, `${b.blockId}-else`, t('builder.else'))));
  }

  function blockCard(b, siblings, i) {
    const def = defs[b.type] || { label: b.type, properties: [], acceptsChildren: false };
    const errs = errorsOf(b.blockId);
    const propDefs = def.properties || [];
    const props = propDefs.filter((p) => !OWN_CONTROLS.includes(p.name) && p.type !== 'block[]').map((p) => {
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
      } else {
        input = h('input', { type: 'text', value: val ?? '' });
        input.addEventListener('input', () => { setProp(b, p.name, input.value); refresh(); });
      }
      input.dataset.key = `${b.blockId}:${p.name}`;
      return field(`${p.name}${p.required ? ' *' : ''}`, input);
    });
    const move = (step) => { const j = i + step; if (j < 0 || j >= siblings.length) return; [siblings[i], siblings[j]] = [siblings[j], siblings[i]]; changed(); };
    const card = h('fieldset', {
      class: `block${errs.length ? ' invalid' : ''}${state.target && state.target.list === b.children ? ' target' : ''}`, 'data-block': b.blockId, 'data-type': b.type,
      // Dropping on a card puts the dragged block before it (upper half) or after it.
      ondragover: (e) => {
        if (!state.drag || state.drag.block === b || listsInside(state.drag.block).includes(siblings)) return;
        e.preventDefault();
        e.stopPropagation();
        const r = card.getBoundingClientRect();
        const after = e.clientY > r.top + r.height / 2;
        clearMarks();
        card.classList.add(after ? 'drop-after' : 'drop-before');
      },
      ondragleave: (e) => { if (e.target === card) card.classList.remove('drop-before', 'drop-after'); },
      ondrop: (e) => {
        if (!state.drag || state.drag.block === b) return;
        e.preventDefault();
        e.stopPropagation();
        const after = card.classList.contains('drop-after');
        clearMarks();
        dropInto(siblings, siblings.indexOf(b) + (after ? 1 : 0));
      },
    },
    h('legend', {},
      // The handle the mouse drags; keyboard users have Move up / Move down / Add inside.
      h('span', {
        class: 'handle', draggable: 'true', title: t('builder.drag'), 'aria-hidden': 'true', text: '⠿',
        ondragstart: (e) => {
          state.drag = { block: b, list: siblings };
          e.dataTransfer.effectAllowed = 'move';
          e.dataTransfer.setData('text/plain', b.blockId);
          e.dataTransfer.setDragImage(card, 12, 12);
          card.classList.add('dragging');
        },
        ondragend: () => { state.drag = null; card.classList.remove('dragging'); clearMarks(); },
      }),
      ` ${def.label} `, h('code', { text: b.blockId })),
    h('div', { class: 'row' }, props),
    propDefs.some((p) => p.name === 'filters') || b.filters ? filtersForm(b) : null,
    h('div', { class: 'block-errors' }, errorLines(errs)),
    h('div', { class: 'actions' },
      h('button', { type: 'button', text: t('builder.up'), disabled: i === 0, 'data-key': `${b.blockId}:up`, onclick: () => move(-1) }),
      h('button', { type: 'button', text: t('builder.down'), disabled: i === siblings.length - 1, 'data-key': `${b.blockId}:down`, onclick: () => move(1) }),
      def.acceptsChildren ? intoButton(b.children || (b.children = []), b.blockId) : null,
      h('button', { type: 'button', class: 'danger', text: t('builder.remove'), onclick: () => {
        siblings.splice(i, 1);
        if (state.target && (state.target.list === b.children || listsInside(b).includes(state.target.list))) state.target = null;
        changed();
      } })),
    def.acceptsChildren ? listBox(b.children || (b.children = []), b.blockId, t('builder.children')) : null,
    propDefs.some((p) => p.name === 'elifBranches') ? branchesForm(b) : null);
    return card;
  }

  /** Redraws the blocks, keeping the focus (and the caret) on the control that had it. */
  function draw() {
    const active = document.activeElement;
    const key = active && tree.contains(active) ? active.dataset.key : null;
    const caret = key && typeof active.selectionStart === 'number' ? [active.selectionStart, active.selectionEnd] : null;
    target.textContent = state.target ? t('builder.selected', { id: state.target.id }) : t('builder.root');
    const top = listBox(state.blocks, 'root', t('builder.title'));
    top.classList.replace('children', 'top');
    replace(tree, state.blocks.length ? null : h('p', { class: 'muted', text: t('builder.empty') }), top);
    if (!key) return;
    const again = [...tree.querySelectorAll('[data-key]')].find((el) => el.dataset.key === key);
    if (!again) return;
    again.focus();
    if (caret && typeof again.setSelectionRange === 'function') again.setSelectionRange(caret[0], caret[1]);
  }

  const add = h('button', {
    type: 'button', id: 'builder-add', class: 'primary', text: t('builder.add'), disabled: !can_write,
    onclick: () => {
      (state.target ? state.target.list : state.blocks).push(newBlock(defs[palette.value]));
      changed();
    },
  });
  const save = h('button', {
    type: 'button', id: 'builder-save', class: 'primary', text: t('builder.saveAs'), disabled: !can_write,
    onclick: async () => {
      msg.textContent = '';
      try {
        const blocks = clean(state.blocks);
        const g = await api('POST', '/v1/templates/generate-code', { json: { blocks, format: format.value } });
        // The generated code, byte for byte, then the one comment that carries the blocks.
        const source = withBlocks(g.code, { blocks, format: format.value, description: desc.value });
        const tpl = state.templateId ? await updateTemplate(state.templateId, source, desc.value) : await uploadTemplate(source, format.value, desc.value);
        state.templateId = tpl.id;
        toast(t('builder.saved'));
        main.dataset.savedTemplate = tpl.id;
      } catch (e) {
        msg.textContent = `${e.code || t('error')}: ${e.message}`;
      }
    },
  });
  format.addEventListener('change', refresh);

  replace(main, h('h1', { text: t('builder.title') }), notice,
    h('section', { class: 'card' }, h('div', { class: 'row' }, field(t('builder.palette'), palette), add, field(t('templates.format'), format)), target,
      h('p', { class: 'muted', text: t('builder.dragHint') })),
    h('div', { class: 'editor two' },
      h('section', { class: 'card', 'aria-label': t('builder.title') }, tree),
      h('section', { class: 'card', 'aria-label': t('builder.code') }, h('h2', { text: t('builder.code') }), verdict, code,
        h('div', { class: 'row' }, field(t('templates.description'), desc), save), msg,
        h('details', {}, h('summary', { text: t('builder.filters') }), h('ul', { class: 'plain' }, filters.filters.map((f) => h('li', {}, h('code', { text: f.name }), ' — ', f.description, ' ', h('code', { text: f.example }))))))));
  draw();
  refresh();

  // A reopened template whose code no longer matches its blocks was edited outside the
  // builder: say so before a save from here replaces those edits.
  if (reopened && can_write) {
    try {
      const g = await api('POST', '/v1/templates/generate-code', { json: { blocks: clean(state.blocks), format: format.value } });
      if (g.code !== reopened.code) notice.appendChild(h('p', { class: 'warn', id: 'builder-stale', text: t('builder.markerStale') }));
    } catch { /* the verdict shows what is wrong with the blocks */ }
  }
  if (reopened) main.dataset.reopened = params.id;
}
