import { describe, expect, it } from 'vitest';
import { asciiComments } from '../scripts/ascii-comments.ts';

describe("the bundle's comments made ASCII (scripts/ascii-comments.ts)", () => {
  it('when only comments hold non-ASCII characters, then they become "?", one per UTF-16 unit, and the code is the same', () => {
    const source = [
      '// JIS X 0201 – ¥ and Kana',
      'const a = "x"; // “quoted” 𝄞',
      '/**',
      ' * **invalid** – a malformed schema',
      ' */',
      '/*!',
      '  (*! formdata-polyfill. MIT License. Jimmy Wärting *)',
      '*/',
      'export const b = a + "\\u2013";',
    ].join('\n');
    const made = asciiComments(source);
    expect(made.kind).toBe('ascii');
    if (made.kind !== 'ascii') return;
    expect(made.text).not.toMatch(/[\u0080-\uffff]/);
    expect(made.text.split('\n').map((line) => line.length)).toEqual(
      source.split('\n').map((line) => line.length),
    );
    expect(made.text).toContain('const a = "x"; // ?quoted? ??');
    expect(made.text).toContain('Jimmy W?rting');
    expect(made.lines).toBe(4);
  });

  it('when a regular expression or a String.raw template after a `//` holds one, then it is refused, not changed', () => {
    for (const source of [
      'export const f = (s) => s.startsWith("http://") && /[–—]/.test(s);',
      'export const g = String.raw`http://x • item`;',
    ]) {
      expect(asciiComments(source)).toEqual({
        kind: 'refused',
        reason: 'the replacement would change code, not only comments',
      });
    }
  });

  it('when a non-ASCII character is outside any comment it recognises, then it is refused', () => {
    expect(asciiComments('export const r = /[–]/;').kind).toBe('refused');
  });

  it('when the source is ASCII already, then nothing changes', () => {
    expect(asciiComments('export const a = 1; // plain\n')).toEqual({ kind: 'unchanged' });
  });
});
