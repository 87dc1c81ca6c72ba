import { transformSync } from 'esbuild';

const NON_ASCII = /[\u0080-\uffff]/;
const NON_ASCII_GLOBAL = /[\u0080-\uffff]/g;

/** What `asciiComments` made of a source. */
export type AsciiComments =
  | { kind: 'unchanged' }
  | { kind: 'ascii'; text: string; lines: number }
  | { kind: 'refused'; reason: string };

/**
 * The server's bundle (scripts/bundle-server.ts) as ASCII. esbuild escapes the non-ASCII characters of
 * strings and identifiers (its default `charset`) but keeps the dependencies' comments as they are, and one
 * non-ASCII character in a comment (a "–" or a "§") makes Node decode the whole 6.6 MB file as UTF-8 and
 * V8 hold it as a two-byte string: 45 ms of decoding at every start, against 8 for ASCII, and twice the
 * memory. So such characters in comments become "?", one per UTF-16 unit (so a source map's columns stay
 * right): on a line, those after its first `//`; all of them on a line that opens with `*` or `/*`, and on
 * the lines of a block comment opened at the start of a line (the licences esbuild gathers at the end).
 *
 * esbuild does not escape a regular expression's or a `String.raw` template's characters, which such a line
 * could hold too, so the result is refused unless, comments and whitespace stripped by esbuild
 * (`minifyWhitespace`, licences dropped), it is the very same code as the source; and refused if a
 * non-ASCII character is left.
 */
export function asciiComments(source: string): AsciiComments {
  const lines = source.split('\n');
  let changed = 0;
  let inBlock = false;
  for (const [n, line] of lines.entries()) {
    const trimmed = line.trimStart();
    const opens = !inBlock && trimmed.startsWith('/*');
    const whole = inBlock || opens || trimmed.startsWith('*');
    if (opens) inBlock = !trimmed.includes('*/', 2);
    else if (inBlock && line.includes('*/')) inBlock = false;
    if (!NON_ASCII.test(line)) continue;
    const from = whole ? 0 : line.indexOf('//');
    if (from < 0) continue;
    lines[n] =
      line.slice(0, from) + line.slice(from).replace(NON_ASCII_GLOBAL, (unit) => '?'.repeat(unit.length));
    changed++;
  }
  const text = lines.join('\n');
  if (NON_ASCII.test(text))
    return { kind: 'refused', reason: 'non-ASCII characters outside the comments it recognises' };
  if (changed === 0) return { kind: 'unchanged' };
  const code = (input: string) =>
    transformSync(input, { minifyWhitespace: true, legalComments: 'none', charset: 'utf8' }).code;
  if (code(text) !== code(source))
    return { kind: 'refused', reason: 'the replacement would change code, not only comments' };
  return { kind: 'ascii', text, lines: changed };
}
