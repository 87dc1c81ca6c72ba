import { pointerToken } from './text-policy.js';

/**
 * Objects that name a member twice (`{"subject":"a","subject":"b"}`). JSON.parse keeps the last, silently,
 * while another parser (a proxy, a gateway's filter, the client's own log) may keep the first: what was
 * checked would not be what is scored and logged. RFC 8259 says names SHOULD be unique, and I-JSON
 * (RFC 7493), which the log's canonical form (RFC 8785) is defined over, says MUST; so such a body is
 * refused as malformed.
 *
 * The check costs no allocation when there is none: the member names in the body's text (strings followed
 * by `:`) are counted and compared with the members of the parsed value, which are fewer exactly when an
 * object repeats a name. Only then is the text walked again to say where.
 */

/** The members of the parsed JSON `value`, in all its objects (without recursion: nesting is unbounded). */
export function parsedMemberCount(value: unknown): number {
  if (value === null || typeof value !== 'object') return 0;
  let count = 0;
  const stack: object[] = [value];
  for (let container = stack.pop(); container !== undefined; container = stack.pop()) {
    if (Array.isArray(container)) {
      for (const element of container)
        if (element !== null && typeof element === 'object') stack.push(element);
      continue;
    }
    const record = container as Record<string, unknown>;
    for (const name in record) {
      count++;
      const member = record[name];
      if (member !== null && typeof member === 'object') stack.push(member);
    }
  }
  return count;
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COLON = 0x3a;

function isJsonWhitespace(byte: number | undefined): boolean {
  return byte === 0x20 || byte === 0x0a || byte === 0x0d || byte === 0x09;
}

/**
 * In `text`, valid JSON in UTF-8, the closing quote of the string opened at `open`: its bytes are skipped
 * whole (an escaped quote included), and a multi-byte UTF-8 sequence holds no byte below 0x80, so no quote
 * inside a string is taken for its end.
 */
function stringEnd(text: Uint8Array, open: number): number {
  let close = open + 1;
  while (close < text.length && text[close] !== QUOTE) close += text[close] === BACKSLASH ? 2 : 1;
  return close;
}

/** Whether the string closed at `close` is a member name: followed by `:`. */
function namesMember(text: Uint8Array, close: number): boolean {
  let next = close + 1;
  while (isJsonWhitespace(text[next])) next++;
  return text[next] === COLON;
}

/** The member names in `text`, valid JSON in UTF-8: the strings followed by `:`. */
export function memberNameCount(text: Uint8Array): number {
  let count = 0;
  for (let i = 0; i < text.length; i++) {
    if (text[i] !== QUOTE) continue;
    i = stringEnd(text, i);
    if (namesMember(text, i)) count++;
  }
  return count;
}

/**
 * The deepest nesting of arrays and objects a request may have: no body of the contract nests more than 4
 * levels (a run's item's context), and a deeper one only costs (JSON.parse and every walk after it take
 * about a second for the 524,288 levels of a 1 MiB body, which gzip sends in 1 KB).
 */
export const MAX_NESTING = 32;

/** Whether `text` (UTF-8, JSON or not) nests arrays and objects deeper than `max` outside its strings. */
export function nestsDeeperThan(text: Uint8Array, max: number): boolean {
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    const byte = text[i];
    if (byte === QUOTE) i = stringEnd(text, i);
    else if (byte === 0x5b || byte === 0x7b) {
      if (++depth > max) return true;
    } else if (byte === 0x5d || byte === 0x7d) depth--;
  }
  return false;
}

/** A member named twice in one object: the object's JSON Pointer (RFC 6901) and the name. */
export interface DuplicateMember {
  pointer: string;
  name: string;
}

type Frame = { names: Set<string>; name?: string } | { index: number };

function pointerSegment(segment: string | number): string {
  return `/${pointerToken(String(segment))}`;
}

const decoder = new TextDecoder();

/**
 * The first member named twice in one object of `text` (valid JSON in UTF-8), with where its object is;
 * undefined when none is. A walk of the text's tokens with a stack of the open containers (no recursion).
 */
export function firstDuplicateMember(text: Uint8Array): DuplicateMember | undefined {
  const frames: Frame[] = [];
  const path: string[] = [];
  for (let i = 0; i < text.length; i++) {
    const byte = text[i];
    const top = frames.at(-1);
    if (byte === 0x7b || byte === 0x5b) {
      // { or [
      if (top !== undefined) path.push(pointerSegment('index' in top ? top.index : (top.name ?? '')));
      frames.push(byte === 0x7b ? { names: new Set() } : { index: 0 });
    } else if (byte === 0x7d || byte === 0x5d) {
      // } or ]
      frames.pop();
      path.pop();
    } else if (byte === 0x2c && top !== undefined && 'index' in top) {
      // , in an array
      top.index++;
    } else if (byte === QUOTE) {
      const close = stringEnd(text, i);
      if (top !== undefined && 'names' in top && namesMember(text, close)) {
        const name = JSON.parse(decoder.decode(text.subarray(i, close + 1))) as string;
        if (top.names.has(name)) return { pointer: path.join(''), name };
        top.names.add(name);
        top.name = name;
      }
      i = close;
    }
  }
  return undefined;
}
