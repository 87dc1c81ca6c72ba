import { createHash } from 'node:crypto';
import { type CompiledQuery, sql } from 'kysely';
import { expect, it } from 'vitest';
import { queryPlan } from '../../test/support/query-plan.js';
import { forEachDatabase } from '../../test/support/test-databases.js';
import {
  readSubjectRecordsPage,
  runItemRecordsGroup,
  runItemRecordsPage,
  subjectRecordsGroup,
  subjectRecordsPage,
} from '../erasure/erasure-store.js';
import { down, up } from './migrations/0020-subject-key-prefix-indexes.js';
import { down as down0024, up as up0024 } from './migrations/0024-subject-index-of-scorings.js';
import { CID_PREFIX_LENGTH, SUBJECT_KEY_PREFIX_LENGTH, subjectKeyIs } from './subject-key-index.js';

/** Two keys of one prefix (64 hex digits, as the keyed hash writes them): the index finds both, the whole key tells them apart. */
const PREFIX = '0123456789abcdef'.slice(0, SUBJECT_KEY_PREFIX_LENGTH);
const KEY = `${PREFIX}${'a'.repeat(64 - SUBJECT_KEY_PREFIX_LENGTH)}`;
const TWIN = `${PREFIX}${'b'.repeat(64 - SUBJECT_KEY_PREFIX_LENGTH)}`;

forEachDatabase('the subject indexes (migrations 0020 and 0024)', ({ storage, kind }) => {
  const db = () => storage().db;

  const plan = (query: CompiledQuery) => queryPlan(db(), kind, query);

  it("a subject's log records are found through log_records_subject_idx, not by reading the table", async () => {
    // The page the API lists (listSubjectRecords), for a subject with many records, before any ANALYZE (so
    // PostgreSQL's estimate is a single row): the plan must walk the index in order, not read them all.
    await db()
      .insertInto('log_records')
      .values(
        Array.from({ length: 2000 }, (_, n) => ({
          tenant_id: 'tenant-a',
          cid: `bafkrei${createHash('sha256').update(String(n)).digest('hex').slice(0, 52)}`,
          bytes: new TextEncoder().encode(`{"n":${n}}`),
          request_id: `req_many${n}`,
          created_at: new Date(Date.UTC(2026, 10, 27, 0, 0, 0, n)).toISOString(),
          subject_key: KEY,
        })),
      )
      .execute();
    const query = subjectRecordsPage(db(), 'tenant-a', KEY, '', 11).compile();
    const lines = await plan(query);
    expect(lines.some((line) => line.includes('log_records_subject_idx'))).toBe(true);
    expect(lines.filter((line) => /^SCAN log_records\b|Seq Scan on log_records/.test(line))).toEqual([]);
    // In the index's order, so a page reads about a page of rows: no sort of all the subject's records.
    expect(lines.filter((line) => /USE TEMP B-TREE|Sort\b|MATERIALIZE/.test(line))).toEqual([]);
  });

  it('a group of records sharing a CID prefix is read through log_records_subject_idx too', async () => {
    // readSubjectRecordsPage's query for a tied group larger than a page.
    const tie = 'bafkreitiessssssssssss'.slice(0, CID_PREFIX_LENGTH);
    const lines = await plan(subjectRecordsGroup(db(), 'tenant-a', KEY, tie).compile());
    expect(lines.some((line) => line.includes('log_records_subject_idx'))).toBe(true);
    expect(
      lines.filter((line) =>
        /^SCAN log_records\b|Seq Scan on log_records|autoindex|log_records_pk/.test(line),
      ),
    ).toEqual([]);
    const items = await plan(runItemRecordsGroup(db(), 'tenant-a', KEY, tie).compile());
    expect(items.some((line) => line.includes('run_items_subject_idx'))).toBe(true);
    expect(items.filter((line) => /^SCAN (run_items|log_records)\b|Seq Scan on/.test(line))).toEqual([]);
  });

  it("a subject's run items' records are walked through run_items_subject_idx in CID order (migration 0024)", async () => {
    const lines = await plan(runItemRecordsPage(db(), 'tenant-a', KEY, '', 11).compile());
    expect(lines.some((line) => line.includes('run_items_subject_idx'))).toBe(true);
    expect(lines.filter((line) => /^SCAN (run_items|log_records|runs)\b|Seq Scan on/.test(line))).toEqual([]);
    expect(lines.filter((line) => /USE TEMP B-TREE|Sort\b|MATERIALIZE/.test(line))).toEqual([]);
  });

  it("a subject's run items are found through run_items_subject_idx", async () => {
    const query = db()
      .selectFrom('run_items')
      .innerJoin('runs', 'runs.id', 'run_items.run_id')
      .select(['run_items.run_id', 'run_items.item_index'])
      .where(subjectKeyIs('run_items.subject_key', KEY))
      .where('runs.tenant_id', '=', 'tenant-a')
      .limit(10)
      .compile();
    const lines = await plan(query);
    expect(lines.some((line) => line.includes('run_items_subject_idx'))).toBe(true);
    expect(lines.filter((line) => /^SCAN run_items\b|Seq Scan on run_items/.test(line))).toEqual([]);
  });

  it('a key finds its own rows only, not those of another key with the same prefix', async () => {
    const row = (key: string, n: number) => ({
      tenant_id: 'tenant-twins',
      cid: `bafkreitwin${key[SUBJECT_KEY_PREFIX_LENGTH]}${n}`,
      bytes: new TextEncoder().encode(`{"n":${n}}`),
      request_id: `req_${key[SUBJECT_KEY_PREFIX_LENGTH]}${n}`,
      created_at: new Date(Date.UTC(2026, 10, 27, 0, 0, n)).toISOString(),
      subject_key: key,
    });
    await db()
      .insertInto('log_records')
      .values([row(KEY, 1), row(TWIN, 2), row(KEY, 3)])
      .execute();
    const found = await db()
      .selectFrom('log_records')
      .select('cid')
      .where('tenant_id', '=', 'tenant-twins')
      .where(subjectKeyIs('subject_key', KEY))
      .orderBy('cid')
      .execute();
    expect(found.map((r) => r.cid)).toEqual(['bafkreitwina1', 'bafkreitwina3']);
  });
  it("pages a subject's records in CID order, ties of the CIDs' prefixes included, each once", async () => {
    const tie = 'bafkreitiesssssssssss'.slice(0, CID_PREFIX_LENGTH);
    // Tied CIDs come from the index in the order they were written (c, a, then b), a group larger than a page
    // of 2: the first page ends before it ([bbbb]), the second is read from the whole group and cut by CID
    // ([a, b]), the third holds the rest ([c, zzzz]).
    const cids = [`${tie}c`, 'bafkreizzzz', `${tie}a`, 'bafkreibbbb', 'bafkreiyyyy', `${tie}b`];
    await db()
      .insertInto('log_records')
      .values(
        cids.map((cid, n) => ({
          tenant_id: 'tenant-pages',
          cid,
          bytes: new TextEncoder().encode(`{"n":${n}}`),
          request_id: `req_page${n}`,
          created_at: new Date(Date.UTC(2026, 10, 27, 0, 0, n)).toISOString(),
          subject_key: n === 4 ? TWIN : KEY,
        })),
      )
      .execute();
    const pages: string[][] = [];
    let after = '';
    for (;;) {
      const { rows, more } = await readSubjectRecordsPage(db(), 'tenant-pages', KEY, after, 2);
      pages.push(rows.map((row) => row.cid));
      if (!more) break;
      after = rows.at(-1)?.cid ?? '';
    }
    expect(pages).toEqual([['bafkreibbbb'], [`${tie}a`, `${tie}b`], [`${tie}c`, 'bafkreizzzz']]);
  });

  it("pages a subject's scorings and run items' records together in CID order, another tenant's items left out", async () => {
    const record = (tenantId: string, cid: string, requestId: string, n: number) => ({
      tenant_id: tenantId,
      cid,
      bytes: new TextEncoder().encode(`{"n":${n}}`),
      request_id: requestId,
      created_at: new Date(Date.UTC(2026, 11, 6, 0, 0, n)).toISOString(),
      subject_key: KEY,
    });
    const run = (id: string, tenantId: string) => ({
      id,
      tenant_id: tenantId,
      status: 'completed' as const,
      item_count: 3,
      items: '[]',
      created_at: new Date(Date.UTC(2026, 11, 6)).toISOString(),
      deadline_at: null,
    });
    await db()
      .insertInto('runs')
      .values([run('run_mix', 'tenant-mix'), run('run_other', 'tenant-other')])
      .execute();
    // Scorings b, d, f; run items' records a, c, e (and g, another tenant's run, with the same key).
    await db()
      .insertInto('log_records')
      .values([
        record('tenant-mix', 'bafkreimixb', 'req_b', 1),
        record('tenant-mix', 'bafkreimixd', 'req_d', 2),
        record('tenant-mix', 'bafkreimixf', 'req_f', 3),
        record('tenant-mix', 'bafkreimixa', 'run_mix', 4),
        record('tenant-mix', 'bafkreimixc', 'run_mix', 5),
        record('tenant-mix', 'bafkreimixe', 'run_mix', 6),
        record('tenant-other', 'bafkreimixg', 'run_other', 7),
      ])
      .execute();
    const item = (runId: string, n: number, cid: string | null) => ({
      run_id: runId,
      item_index: n,
      subject: 's',
      status: cid === null ? ('error' as const) : ('ok' as const),
      log_cid: cid,
      escalated: 0 as const,
      error: cid === null ? '{}' : null,
      subject_key: KEY,
    });
    await db()
      .insertInto('run_items')
      .values([
        item('run_mix', 0, 'bafkreimixe'),
        item('run_mix', 1, 'bafkreimixa'),
        item('run_mix', 2, null),
        item('run_mix', 3, 'bafkreimixc'),
        item('run_other', 0, 'bafkreimixg'),
      ])
      .execute();
    for (const limit of [1, 2, 3, 4, 10]) {
      const seen: string[] = [];
      let after = '';
      for (let pages = 0; pages < 10; pages++) {
        const { rows, more } = await readSubjectRecordsPage(db(), 'tenant-mix', KEY, after, limit);
        expect(rows.length).toBeLessThanOrEqual(limit);
        seen.push(...rows.map((row) => row.cid));
        if (!more) break;
        after = rows.at(-1)?.cid ?? after;
      }
      expect(seen).toEqual(['a', 'b', 'c', 'd', 'e', 'f'].map((x) => `bafkreimix${x}`));
    }
    const first = await readSubjectRecordsPage(db(), 'tenant-mix', KEY, '', 2);
    expect(first.rows.map((row) => row.request_id)).toEqual(['run_mix', 'req_b']);
  });

  it("0024's and 0020's downs give back the earlier indexes, and their ups today's again", async () => {
    const definitions = async () => {
      const rows =
        kind === 'sqlite'
          ? (
              await sql<{ definition: string }>`select sql as definition from sqlite_master
                where name in ('log_records_subject_idx', 'run_items_subject_idx') order by name`.execute(
                db(),
              )
            ).rows
          : (
              await sql<{ definition: string }>`select indexdef as definition from pg_indexes
                where indexname in ('log_records_subject_idx', 'run_items_subject_idx') order by indexname`.execute(
                db(),
              )
            ).rows;
      return rows.map((row) => row.definition.replace(/["\s]+/g, '').toLowerCase());
    };
    const today = await definitions();
    expect(today).toHaveLength(2);
    // Spaces and quotes left out: SQLite keeps the statement as written, PostgreSQL writes its own.
    expect(today[0]).toContain('(tenant_id,substr(subject_key,1,11),substr(cid,1,20))');
    expect(today[0]).toContain("substr(request_id,1,4)<>'run_'");
    expect(today[1]).toContain('(substr(subject_key,1,11),substr(log_cid,1,20))');
    await down0024(db());
    const prefixed = await definitions();
    expect(prefixed).toHaveLength(2);
    expect(prefixed[0]).not.toContain('request_id');
    expect(prefixed[0]).toContain('(tenant_id,substr(subject_key,1,11),substr(cid,1,20))');
    expect(prefixed[1]).toContain('(substr(subject_key,1,11))');
    await down(db());
    const before = await definitions();
    expect(before[0]).toContain('(tenant_id,subject_key,cid)');
    expect(before[1]).toContain('(subject_key)');
    await up(db());
    expect(await definitions()).toEqual(prefixed);
    await up0024(db());
    expect(await definitions()).toEqual(today);
  });
});
