/**
 * What a JSON syntax error may say about the body without quoting it. V8's `JSON.parse` messages for an
 * unexpected token quote the text around it (`Unexpected token 'J', ..."subject":JaneSECRET"... is not valid
 * JSON`, or the whole body when it is short), and the body holds personal data (a subject, its context),
 * which an error body must never carry (docs/personal-data.md): those are replaced by the position of the
 * unexpected character, found by `jsonSyntaxErrorOffset`. V8's other messages name a position and JSON's own
 * punctuation only, and are kept.
 */
export function jsonSyntaxErrorMessage(message: string, text?: string): string {
  if (!/^Unexpected token\b/.test(message) && !message.includes('"')) return message;
  const offset = text === undefined ? undefined : jsonSyntaxErrorOffset(text);
  if (offset === undefined || text === undefined) return 'Unexpected character';
  const before = text.slice(0, offset);
  const line = before.split('\n').length;
  const column = offset - before.lastIndexOf('\n');
  return `Unexpected character in JSON at position ${offset} (line ${line} column ${column})`;
}

const WHITESPACE = new Set([' ', '\t', '\n', '\r']);
/** Deeper than this, no position is looked for (the scan recurses; the error path must not overflow). */
const MAX_DEPTH = 512;
const TOO_DEEP: unique symbol = Symbol('too deep');

/**
 * The offset (UTF-16 code units, as V8 counts positions) of the first character at which `text` stops being
 * JSON (RFC 8259), or undefined when it is JSON (or nests deeper than MAX_DEPTH). The text's length when it
 * ends too early.
 */
export function jsonSyntaxErrorOffset(text: string): number | undefined {
  let i = 0;
  const fail = (): never => {
    throw i;
  };
  const space = () => {
    while (i < text.length && WHITESPACE.has(text[i] as string)) i++;
  };
  const literal = (word: string) => {
    for (const char of word) {
      if (text[i] !== char) fail();
      i++;
    }
  };
  const string = () => {
    i++; // the opening quote
    for (;;) {
      if (i >= text.length) fail();
      const code = text.charCodeAt(i);
      if (code === 0x22) {
        i++;
        return;
      }
      if (code < 0x20) fail();
      if (code === 0x5c) {
        i++;
        const escaped = text[i];
        if (escaped === 'u') {
          for (let k = 1; k <= 4; k++) {
            if (!/[0-9a-fA-F]/.test(text[i + k] ?? '')) {
              i += k;
              fail();
            }
          }
          i += 5;
        } else if (escaped !== undefined && '"\\/bfnrt'.includes(escaped)) i++;
        else fail();
      } else i++;
    }
  };
  const number = () => {
    if (text[i] === '-') i++;
    if (text[i] === '0') i++;
    else if (/[1-9]/.test(text[i] ?? '')) while (/[0-9]/.test(text[i] ?? '')) i++;
    else fail();
    if (text[i] === '.') {
      i++;
      if (!/[0-9]/.test(text[i] ?? '')) fail();
      while (/[0-9]/.test(text[i] ?? '')) i++;
    }
    if (text[i] === 'e' || text[i] === 'E') {
      i++;
      if (text[i] === '+' || text[i] === '-') i++;
      if (!/[0-9]/.test(text[i] ?? '')) fail();
      while (/[0-9]/.test(text[i] ?? '')) i++;
    }
  };
  const value = (depth: number): void => {
    if (depth > MAX_DEPTH) throw TOO_DEEP;
    space();
    const char = text[i];
    if (char === '{' || char === '[') {
      const close = char === '{' ? '}' : ']';
      i++;
      space();
      if (text[i] === close) {
        i++;
        return;
      }
      for (;;) {
        if (char === '{') {
          space();
          if (text[i] !== '"') fail();
          string();
          space();
          if (text[i] !== ':') fail();
          i++;
        }
        value(depth + 1);
        space();
        if (text[i] === ',') {
          i++;
          continue;
        }
        if (text[i] === close) {
          i++;
          return;
        }
        fail();
      }
    }
    if (char === '"') string();
    else if (char === 't') literal('true');
    else if (char === 'f') literal('false');
    else if (char === 'n') literal('null');
    else if (char === '-' || /[0-9]/.test(char ?? '')) number();
    else fail();
  };
  try {
    value(0);
    space();
    if (i < text.length) fail();
    return undefined;
  } catch (offset) {
    if (typeof offset === 'number') return Math.min(offset, text.length);
    if (offset === TOO_DEEP) return undefined;
    throw offset;
  }
}
