import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { expect, it } from 'vitest';
import { parse } from 'yaml';
import { PACKAGE_DIR } from './contract-bundle.js';

/** The scoring-model page's table of context keys: key → its "valid values" cell. */
function pageRanges(): Map<string, string> {
  const page = readFileSync(resolve(PACKAGE_DIR, 'guides/scoring-model.md'), 'utf8');
  const rows = [...page.matchAll(/^\| `([a-z0-9_]+)`\s*\| ([^|]+?)\s*\|/gm)];
  // The first table that names a key is the context table; later ones (worked examples) name it again.
  const ranges = new Map<string, string>();
  for (const [, key = '', range = ''] of rows) if (!ranges.has(key)) ranges.set(key, range);
  return ranges;
}

it("the scoring-model page's valid values are the contract's bounds for every numeric context key", () => {
  const schema = parse(
    readFileSync(resolve(PACKAGE_DIR, 'components/schemas/ScoreContext.yaml'), 'utf8'),
  ) as {
    properties: Record<string, { type?: string; minimum?: number; maximum?: number }>;
  };
  const ranges = pageRanges();
  const numeric = Object.entries(schema.properties).filter(
    ([, property]) => property.type === 'number' || property.type === 'integer',
  );
  expect(numeric.length).toBeGreaterThan(3);
  for (const [key, { type, minimum, maximum }] of numeric) {
    const expected = `${type === 'integer' ? 'integer ' : ''}${minimum} … ${maximum}`;
    // Either form the page uses: `0 … 10` or `0–100`.
    const written = ranges.get(key)?.replace(/(\d)–(\d)/, '$1 … $2');
    expect(written, key).toBe(expected);
  }
});
