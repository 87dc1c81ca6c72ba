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
  const { line, column } = lineAndColumn(text, offset);
  return `Unexpected character in JSON at position ${offset} (line ${line} column ${column})`;
}

/** The line and column (from 1) of `offset` in `text`, counted as V8 counts them: `\r\n`, `\r` and `\n` each end a line. */
export function lineAndColumn(text: string, offset: number): { line: number; column: number } {
  let line = 1;
  let column = 1;
  for (let i = 0; i < offset; i++) {
    const code = text.charCodeAt(i);
    if (code === CR) {
      line++;
      column = 1;
      if (text.charCodeAt(i + 1) === LF && i + 1 < offset) i++;
    } else if (code === LF) {
      line++;
      column = 1;
    } else column++;
  }
  return { line, column };
}

const CR = 0x0d;
const LF = 0x0a;
const SPACE = 0x20;
const TAB = 0x09;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const ZERO = 0x30;
const NINE = 0x39;

/** Deeper than this, no position is looked for (the scan recurses; the error path must not overflow). */
const MAX_DEPTH = 512;
const TOO_DEEP: unique symbol = Symbol('too deep');

const isDigit = (code: number) => code >= ZERO && code <= NINE;
const isHex = (code: number) =>
  isDigit(code) || (code >= 0x41 && code <= 0x46) || (code >= 0x61 && code <= 0x66);

/**
 * The offset (UTF-16 code units, as V8 counts positions) of the first character at which `text` stops being
 * JSON (RFC 8259), or undefined when it is JSON (or nests deeper than MAX_DEPTH). The text's length when it
 * ends too early. One pass of character codes: it runs on the error path of every malformed body (up to the
 * body limit), so it must cost about what the parse that failed did.
 */
export function jsonSyntaxErrorOffset(text: string): number | undefined {
  const length = text.length;
  let i = 0;
  const fail = (): never => {
    throw i;
  };
  const space = () => {
    for (;;) {
      const code = text.charCodeAt(i);
      if (code === SPACE || code === LF || code === CR || code === TAB) i++;
      else return;
    }
  };
  const literal = (word: string) => {
    for (let k = 0; k < word.length; k++) {
      if (text.charCodeAt(i) !== word.charCodeAt(k)) fail();
      i++;
    }
  };
  const string = () => {
    i++; // the opening quote
    for (;;) {
      if (i >= length) fail();
      const code = text.charCodeAt(i);
      if (code === QUOTE) {
        i++;
        return;
      }
      if (code < SPACE) fail();
      if (code !== BACKSLASH) {
        i++;
        continue;
      }
      i++;
      const escaped = text.charCodeAt(i);
      if (escaped === 0x75) {
        // \uXXXX
        for (let k = 1; k <= 4; k++) {
          if (!isHex(text.charCodeAt(i + k))) {
            i += k;
            fail();
          }
        }
        i += 5;
      } else if (
        escaped === QUOTE ||
        escaped === BACKSLASH ||
        escaped === 0x2f || // /
        escaped === 0x62 || // b
        escaped === 0x66 || // f
        escaped === 0x6e || // n
        escaped === 0x72 || // r
        escaped === 0x74 // t
      )
        i++;
      else fail();
    }
  };
  const digits = () => {
    if (!isDigit(text.charCodeAt(i))) fail();
    while (isDigit(text.charCodeAt(i))) i++;
  };
  const number = () => {
    if (text.charCodeAt(i) === 0x2d) i++; // -
    if (text.charCodeAt(i) === ZERO) i++;
    else digits();
    if (text.charCodeAt(i) === 0x2e) {
      // .
      i++;
      digits();
    }
    const exponent = text.charCodeAt(i);
    if (exponent === 0x65 || exponent === 0x45) {
      // e, E
      i++;
      const sign = text.charCodeAt(i);
      if (sign === 0x2b || sign === 0x2d) i++;
      digits();
    }
  };
  const value = (depth: number): void => {
    if (depth > MAX_DEPTH) throw TOO_DEEP;
    space();
    const code = text.charCodeAt(i);
    if (code === 0x7b || code === 0x5b) {
      // { or [
      const object = code === 0x7b;
      const close = object ? 0x7d : 0x5d;
      i++;
      space();
      if (text.charCodeAt(i) === close) {
        i++;
        return;
      }
      for (;;) {
        if (object) {
          space();
          if (text.charCodeAt(i) !== QUOTE) fail();
          string();
          space();
          if (text.charCodeAt(i) !== 0x3a) fail(); // :
          i++;
        }
        value(depth + 1);
        space();
        const next = text.charCodeAt(i);
        if (next === 0x2c)
          i++; // ,
        else if (next === close) {
          i++;
          return;
        } else fail();
      }
    }
    if (code === QUOTE) string();
    else if (code === 0x74) literal('true');
    else if (code === 0x66) literal('false');
    else if (code === 0x6e) literal('null');
    else if (code === 0x2d || isDigit(code)) number();
    else fail();
  };
  try {
    value(0);
    space();
    if (i < length) fail();
    return undefined;
  } catch (offset) {
    if (typeof offset === 'number') return Math.min(offset, length);
    if (offset === TOO_DEEP) return undefined;
    throw offset;
  }
}
