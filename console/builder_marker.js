// The builder's blocks carried in a template's own source, so a builder-made template reopens
// as blocks in any browser: one Pongo2 comment appended to the generated code,
//
//   {# reporter-console:builder v1 <base64url of the JSON {blocks, format, description}> #}
//
// A comment renders to nothing (the engine test in adapters/pongo2/tests/examples.rs checks
// it), and base64url (A-Z a-z 0-9 - _) can never contain the `#}` that would end it early,
// nor a newline (a Pongo2 comment is one line). The API is unchanged: generate-code's output
// is kept byte for byte, the comment follows it.

const PREFIX = '{# reporter-console:builder ';
const SUFFIX = ' #}';
/** The version this console writes and reads. */
export const VERSION = 'v1';
/** The largest encoded payload read back (a source is at most 1 MiB). */
export const MAX_ENCODED = 512 * 1024;
/** Deepest nesting and most blocks read back. */
const MAX_DEPTH = 64;
const MAX_BLOCKS = 5000;
const FORMATS = ['html', 'pdf', 'csv', 'xml', 'txt'];

/** Thrown for a marker that is there but cannot be used; `reason` is an i18n key. */
export class MarkerError extends Error {
  constructor(reason, detail = '') {
    super(detail ? `${reason}: ${detail}` : reason);
    this.reason = reason;
    this.detail = detail;
  }
}

function toBase64Url(text) {
  const bytes = new TextEncoder().encode(text);
  let bin = '';
  for (let i = 0; i < bytes.length; i += 0x8000) bin += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(bin).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

function fromBase64Url(b64) {
  if (!/^[A-Za-z0-9_-]*$/.test(b64) || b64.length % 4 === 1) throw new MarkerError('builder.markerBad', 'not base64url');
  const bin = atob(b64.replace(/-/g, '+').replace(/_/g, '/') + '='.repeat((4 - (b64.length % 4)) % 4));
  const bytes = Uint8Array.from(bin, (c) => c.charCodeAt(0));
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    throw new MarkerError('builder.markerBad', 'not UTF-8');
  }
}

/** `code` with the blocks comment appended (nothing else changes). */
export function withBlocks(code, { blocks, format, description }) {
  const json = JSON.stringify({ blocks, format, description: description || '' });
  return `${code}${PREFIX}${VERSION} ${toBase64Url(json)}${SUFFIX}`;
}

/** Checks the shape of decoded blocks: objects with a string blockId and type, children
 * arrays of the same, within the depth and count bounds. */
function checkBlocks(blocks, depth, count) {
  if (!Array.isArray(blocks)) throw new MarkerError('builder.markerBad', 'blocks is not a list');
  if (depth > MAX_DEPTH) throw new MarkerError('builder.markerBad', 'nested too deep');
  for (const b of blocks) {
    count.n += 1;
    if (count.n > MAX_BLOCKS) throw new MarkerError('builder.markerBad', 'too many blocks');
    if (!b || typeof b !== 'object' || Array.isArray(b)) throw new MarkerError('builder.markerBad', 'a block is not an object');
    if (typeof b.blockId !== 'string' || typeof b.type !== 'string') throw new MarkerError('builder.markerBad', 'a block without blockId or type');
    for (const k of ['children', 'elseChildren']) if (b[k] !== undefined) checkBlocks(b[k], depth + 1, count);
  }
}

/**
 * The blocks a source carries: null when it carries none (no comment at its end), else
 * `{ code, blocks, format, description }` where `code` is the source without the comment.
 * Throws MarkerError for a comment that is there but too large, of another version, or
 * malformed.
 */
export function readBlocks(source) {
  const text = source.replace(/\s+$/, '');
  const at = text.lastIndexOf(PREFIX);
  if (at < 0 || !text.endsWith(SUFFIX)) return null;
  const inner = text.slice(at + PREFIX.length, text.length - SUFFIX.length);
  if (inner.includes('#}') || inner.includes('\n')) return null; // not one comment at the end
  const space = inner.indexOf(' ');
  const version = space < 0 ? inner : inner.slice(0, space);
  if (version !== VERSION) throw new MarkerError('builder.markerVersion', version);
  const payload = inner.slice(space + 1);
  if (payload.length > MAX_ENCODED) throw new MarkerError('builder.markerLarge', String(payload.length));
  let info;
  try {
    info = JSON.parse(fromBase64Url(payload));
  } catch (e) {
    if (e instanceof MarkerError) throw e;
    throw new MarkerError('builder.markerBad', 'not JSON');
  }
  if (!info || typeof info !== 'object') throw new MarkerError('builder.markerBad', 'not an object');
  checkBlocks(info.blocks, 1, { n: 0 });
  if (!FORMATS.includes(info.format)) throw new MarkerError('builder.markerBad', 'unknown format');
  return {
    code: source.slice(0, at),
    blocks: info.blocks,
    format: info.format,
    description: typeof info.description === 'string' ? info.description : '',
  };
}
