import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { jsonSyntaxErrorMessage, jsonSyntaxErrorOffset, lineAndColumn } from './json-syntax-error.js';

/** V8's message for `text`, which must not be JSON. */
function v8Message(text: string): string {
  try {
    JSON.parse(text);
  } catch (error) {
    return (error as Error).message;
  }
  throw new Error(`${text} is JSON`);
}

describe('a JSON syntax error', () => {
  it('never quotes the body: an unexpected token is given by its position', () => {
    const body = '{"subject":JaneSECRETDoe, "context": {"jurisdiction": "DE"}}';
    expect(v8Message(body)).toContain('JaneSECRET');
    const message = jsonSyntaxErrorMessage(v8Message(body), body);
    expect(message).toBe('Unexpected character in JSON at position 11 (line 1 column 12)');
    expect(jsonSyntaxErrorMessage(v8Message('[1,]'), '[1,]')).toBe(
      'Unexpected character in JSON at position 3 (line 1 column 4)',
    );
    expect(jsonSyntaxErrorMessage(v8Message('{\n"a":\nx}'), '{\n"a":\nx}')).toBe(
      'Unexpected character in JSON at position 7 (line 3 column 1)',
    );
    // Without the text, nothing but the kind of error.
    expect(jsonSyntaxErrorMessage(v8Message(body))).toBe('Unexpected character');
    // V8's messages that name a position and JSON's punctuation only are kept.
    expect(jsonSyntaxErrorMessage(v8Message('{"a": 1,}'), '{"a": 1,}')).toBe(v8Message('{"a": 1,}'));
    expect(jsonSyntaxErrorMessage('Unexpected end of JSON input', '{')).toBe('Unexpected end of JSON input');
  });

  it('finds the offset V8 reports, wherever V8 reports one', () => {
    const corrupt = fc
      .tuple(
        fc.json(),
        fc.nat(),
        fc.constantFrom(
          'x',
          ',',
          '}',
          ']',
          '"',
          ':',
          '\u0001',
          '-',
          '0',
          ' ',
          '\\',
          'tru',
          '1e',
          '\r',
          '\r\n',
          '\n',
          '\n\r',
          '\\u12',
        ),
      )
      .map(([json, at, junk]) => {
        const cut = at % (json.length + 1);
        return json.slice(0, cut) + junk + json.slice(cut);
      });
    fc.assert(
      fc.property(corrupt, (text) => {
        let parsed = true;
        try {
          JSON.parse(text);
        } catch {
          parsed = false;
        }
        const offset = jsonSyntaxErrorOffset(text);
        if (parsed) return offset === undefined;
        expect(offset).not.toBeUndefined();
        const reported = /at position (\d+) \(line (\d+) column (\d+)\)/.exec(v8Message(text));
        if (reported) {
          expect(offset).toBe(Number(reported[1]));
          expect(lineAndColumn(text, offset as number)).toEqual({
            line: Number(reported[2]),
            column: Number(reported[3]),
          });
        } else if (v8Message(text) === 'Unexpected end of JSON input') expect(offset).toBe(text.length);
        // The rewritten message quotes nothing of the text.
        expect(jsonSyntaxErrorMessage(v8Message(text), text)).not.toMatch(/"/);
        return true;
      }),
      { numRuns: 2000 },
    );
  });

  it('counts lines as V8 does: CR LF, CR and LF each end one', () => {
    const body = '{"subject":"a",\r"context":\r x}';
    expect(jsonSyntaxErrorMessage(v8Message(body), body)).toBe(
      'Unexpected character in JSON at position 28 (line 3 column 2)',
    );
  });

  it('scans a malformed body of 1 MiB in one pass of its characters', () => {
    const body = `[${'1234567890,'.repeat(95_000)}x]`;
    expect(jsonSyntaxErrorOffset(body)).toBe(body.length - 2);
  });

  it('gives no position, and does not overflow, for a body nested past its depth', () => {
    const deep = `${'['.repeat(100_000)}x`;
    expect(jsonSyntaxErrorOffset(deep)).toBeUndefined();
    expect(jsonSyntaxErrorMessage(v8Message(deep), deep)).toMatch(/^Unexpected/);
  });
});
