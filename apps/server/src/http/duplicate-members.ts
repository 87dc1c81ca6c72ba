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
 * The member names in `text`, valid JSON in UTF-8: the strings followed by `:`. A string's bytes are
 * skipped whole (an escaped quote included), and a multi-byte UTF-8 sequence holds no byte below 0x80, so
 * no quote or colon inside a string is counted.
 */
export function memberNameCount(text: Uint8Array): number {
  let count = 0;
  const end = text.length;
  for (let i = 0; i < end; i++) {
    if (text[i] !== QUOTE) continue;
    // The string's closing quote.
    i++;
    while (i < end && text[i] !== QUOTE) i += text[i] === BACKSLASH ? 2 : 1;
    let next = i + 1;
    while (isJsonWhitespace(text[next])) next++;
    if (text[next] === COLON) count++;
  }
  return count;
}

/** A member named twice in one object: the object's JSON Pointer (RFC 6901) and the name. */
export interface DuplicateMember {
  pointer: string;
  name: string;
}

type Frame = { names: Set<string>; name?: string } | { index: number };

function pointerSegment(segment: string | number): string {
  return `/${String(segment).replaceAll('~', '~0').replaceAll('/', '~1')}`;
}

/**
 * The first member named twice in one object of `text` (valid JSON), with where its object is; undefined
 * when none is. A walk of the text's tokens with a stack of the open containers (no recursion).
 */
export function firstDuplicateMember(text: string): DuplicateMember | undefined {
  const frames: Frame[] = [];
  const path: string[] = [];
  for (let i = 0; i < text.length; i++) {
    const char = text[i];
    const top = frames.at(-1);
    if (char === '{' || char === '[') {
      if (top !== undefined) path.push(pointerSegment('index' in top ? top.index : (top.name ?? '')));
      frames.push(char === '{' ? { names: new Set() } : { index: 0 });
    } else if (char === '}' || char === ']') {
      frames.pop();
      path.pop();
    } else if (char === ',' && top !== undefined && 'index' in top) {
      top.index++;
    } else if (char === '"') {
      let close = i + 1;
      while (text[close] !== '"') close += text[close] === '\\' ? 2 : 1;
      let next = close + 1;
      while (/[ \t\n\r]/.test(text[next] ?? '')) next++;
      if (text[next] === ':' && top !== undefined && 'names' in top) {
        const name = JSON.parse(text.slice(i, close + 1)) as string;
        if (top.names.has(name)) return { pointer: path.join(''), name };
        top.names.add(name);
        top.name = name;
      }
      i = close;
    }
  }
  return undefined;
}
