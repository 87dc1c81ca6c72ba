import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { costTable, type ScaleResult, sizingTable } from './sizing.ts';

const DOCS = new URL('../../docs/', import.meta.url);

/** The text of docs/scaling.md between `<!-- name:start -->` and `<!-- name:end -->`. */
function section(markdown: string, name: string): string {
  const start = markdown.indexOf(`<!-- ${name}:start -->`);
  const end = markdown.indexOf(`<!-- ${name}:end -->`);
  if (start < 0 || end < start) throw new Error(`docs/scaling.md has no ${name} markers`);
  return markdown.slice(start + `<!-- ${name}:start -->`.length, end).trim();
}

/**
 * A Markdown table's cells, row by row, trimmed: the docs' formatter (biome) pads the columns, so the text
 * differs from the script's while the table is the same; a separator row is its column count.
 */
function cells(table: string): string[][] {
  return table
    .trim()
    .split('\n')
    .map((line) =>
      line
        .trim()
        .replace(/^\||\|$/g, '')
        .split('|')
        .map((cell) => (/^\s*-+\s*$/.test(cell) ? '---' : cell.trim())),
    );
}

describe('docs/scaling.md', () => {
  const result = JSON.parse(readFileSync(new URL('scale-result.json', DOCS), 'utf8')) as ScaleResult;
  const guide = readFileSync(new URL('scaling.md', DOCS), 'utf8');

  it('holds the cost table computed from docs/scale-result.json', () => {
    expect(cells(section(guide, 'cost-table'))).toEqual(cells(costTable(result)));
  });

  it('holds the sizing table computed from docs/scale-result.json', () => {
    expect(cells(section(guide, 'sizing-table'))).toEqual(cells(sizingTable(result)));
  });

  it('sizes more of everything for more load', () => {
    const rows = sizingTable(result)
      .split('\n')
      .filter((line) => line.includes('PostgreSQL |'))
      .map((line) => Number(line.split('|')[4]));
    expect(rows.length).toBe(3);
    expect(rows[0]).toBeLessThan(rows[2] as number);
  });
});
