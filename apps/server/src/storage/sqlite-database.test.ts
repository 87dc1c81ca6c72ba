import { DatabaseSync } from 'node:sqlite';
import { describe, expect, it } from 'vitest';
import { toKyselySqlite } from './sqlite-database.js';

describe('the node:sqlite adapter', () => {
  it('when the same SQL is prepared again, then the statement is reused, and iterations get their own', () => {
    const adapter = toKyselySqlite(new DatabaseSync(':memory:'));
    adapter.prepare('create table t (n integer)').run([]);
    const insert = adapter.prepare('insert into t (n) values (?)');
    for (let n = 1; n <= 3; n++) expect(adapter.prepare('insert into t (n) values (?)')).toBe(insert);
    for (let n = 1; n <= 3; n++) insert.run([n]);
    const select = adapter.prepare('select n from t order by n');
    const seen: unknown[] = [];
    for (const row of select.iterate([])) {
      // A nested use of the same SQL must not disturb the iteration in progress.
      expect(select.all([])).toHaveLength(3);
      seen.push((row as { n: number }).n);
    }
    expect(seen).toEqual([1, 2, 3]);
    adapter.close();
  });
});
