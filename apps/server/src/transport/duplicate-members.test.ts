import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  firstDuplicateMember,
  memberNameCount,
  nestsDeeperThan,
  parsedMemberCount,
} from './duplicate-members.js';

const utf8 = (text: string) => new TextEncoder().encode(text);
/** Whether the check finds a duplicate in `text`: the counts differ. */
const differs = (text: string) => memberNameCount(utf8(text)) !== parsedMemberCount(JSON.parse(text));

describe('duplicate members', () => {
  it('are not found in any JSON without them, however it is spaced, escaped or nested', () => {
    fc.assert(
      fc.property(fc.jsonValue(), fc.constantFrom(undefined, 1, '\t'), (value, space) => {
        const text = JSON.stringify(value, null, space);
        expect(differs(text)).toBe(false);
        expect(firstDuplicateMember(utf8(text))).toBeUndefined();
      }),
      { numRuns: 500 },
    );
  });

  it('are found in any object of any JSON, and named with where their object is', () => {
    // A member added to one object of the value, under a name it already has.
    const withDuplicate = fc
      .jsonValue()
      .chain((value) => fc.tuple(fc.constant(value), fc.nat()))
      .filter(([value]) => parsedMemberCount(value) > 0);
    fc.assert(
      fc.property(withDuplicate, ([value, pick]) => {
        const objects: { pointer: string; object: Record<string, unknown> }[] = [];
        const visit = (node: unknown, pointer: string) => {
          if (node === null || typeof node !== 'object') return;
          if (!Array.isArray(node) && Object.keys(node).length > 0)
            objects.push({ pointer, object: node as Record<string, unknown> });
          for (const [key, child] of Object.entries(node))
            visit(child, `${pointer}/${key.replaceAll('~', '~0').replaceAll('/', '~1')}`);
        };
        visit(value, '');
        const { pointer, object } = objects[pick % objects.length] as (typeof objects)[number];
        const name = Object.keys(object)[0] as string;
        const marker = '__duplicate_marker__';
        object[marker] = 0;
        // The marker member's text is replaced by the first name's, escaped as JSON.stringify writes it.
        const text = JSON.stringify(value).replace(`"${marker}":0`, () => `${JSON.stringify(name)}:"again"`);
        expect(differs(text)).toBe(true);
        expect(firstDuplicateMember(utf8(text))).toEqual({ pointer, name });
      }),
      { numRuns: 500 },
    );
  });

  it('are told apart from equal names in different objects, escaped names and colons inside strings', () => {
    expect(differs('{"a": {"a": 1}, "b": [{"a": 1}, {"a": 2}]}')).toBe(false);
    expect(differs('{"a\\"": ":", "b": "\\":"}')).toBe(false);
    expect(differs('{"é": 1, "\\u00e9": 2}')).toBe(true);
    expect(firstDuplicateMember(utf8('{"x": [0, {"k": 1}, {"k": 1, "k" : 2}]}'))).toEqual({
      pointer: '/x/2',
      name: 'k',
    });
    expect(firstDuplicateMember(utf8('{"a/b~": {"k": 1, "k": 2}}'))).toEqual({
      pointer: '/a~1b~0',
      name: 'k',
    });
  });

  it('are counted without recursion, so deep nesting is no stack overflow', () => {
    const depth = 200_000;
    const text = `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`;
    expect(memberNameCount(utf8(text))).toBe(depth);
    expect(parsedMemberCount(JSON.parse(text))).toBe(depth);
    expect(firstDuplicateMember(utf8(text))).toBeUndefined();
  });
});

describe('nestsDeeperThan', () => {
  const bytes = (text: string) => Buffer.from(text);
  it('counts the arrays and objects open at once, outside strings (an escaped quote included)', () => {
    expect(nestsDeeperThan(bytes('{"a":[{"b":[1]}]}'), 4)).toBe(false);
    expect(nestsDeeperThan(bytes('{"a":[{"b":[[1]]}]}'), 4)).toBe(true);
    expect(nestsDeeperThan(bytes('[[[]],[[]],[[]]]'), 3)).toBe(false);
    expect(nestsDeeperThan(bytes('{"a":"[[[[[[\\"{{{{{{"}'), 1)).toBe(false);
    expect(nestsDeeperThan(bytes(`${'['.repeat(524_288)}`), 32)).toBe(true);
  });
});
