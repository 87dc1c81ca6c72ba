import { CompiledQuery, type Kysely, sql } from 'kysely';
import type { Database } from './database.js';

/** A multi-row INSERT's shape: its table, its columns in order, and what a conflict on `onConflictDoNothing` does. */
export interface RowInsert<Row> {
  table: keyof Database & string;
  columns: readonly (keyof Row & string)[];
  /** Columns of a unique key: a row already present there is left alone (`on conflict (…) do nothing`). */
  onConflictDoNothing?: readonly (keyof Row & string)[];
}

/** SQL texts made so far, by dialect, shape and row count: a run's batches repeat the same few. */
const texts = new Map<string, string>();
const MAX_TEXTS = 256;

/**
 * Inserts `rows` in one statement whose text is made once per shape and row count, and whose parameters
 * are the rows' values in column order: the same statement Kysely's query builder makes, without
 * building and compiling a query tree of thousands of value nodes each time (a run batch's INSERTs
 * carry 5,000 to 7,000 parameters). The caller keeps `rows.length × columns` below the dialect's limit
 * on bound parameters (SQLite 32766, PostgreSQL 65535).
 */
export async function insertRows<Row extends object>(
  db: Kysely<Database>,
  insert: RowInsert<Row>,
  rows: readonly Row[],
): Promise<void> {
  if (rows.length === 0) return;
  await db.executeQuery(rowInsertQuery(db, insert, rows));
}

/** The statement `insertRows` runs (every column of `insert.columns` given for each row; undefined is NULL). */
export function rowInsertQuery<Row extends object>(
  db: Kysely<Database>,
  insert: RowInsert<Row>,
  rows: readonly Row[],
): CompiledQuery {
  const { columns } = insert;
  const postgres = usesNumberedParameters(db);
  const key = `${postgres ? 'pg' : 'lite'} ${insert.table} ${columns.join(',')} ${insert.onConflictDoNothing?.join(',') ?? ''} ${rows.length}`;
  let text = texts.get(key);
  if (text === undefined) {
    text = insertText(insert, rows.length, postgres);
    if (texts.size >= MAX_TEXTS) texts.clear();
    texts.set(key, text);
  }
  const parameters: unknown[] = new Array(rows.length * columns.length);
  let n = 0;
  for (const row of rows) {
    for (const column of columns) parameters[n++] = (row as Record<string, unknown>)[column] ?? null;
  }
  return CompiledQuery.raw(text, parameters);
}

function insertText<Row>(insert: RowInsert<Row>, rowCount: number, postgres: boolean): string {
  const width = insert.columns.length;
  const tuples: string[] = new Array(rowCount);
  for (let row = 0; row < rowCount; row++) {
    const marks: string[] = new Array(width);
    for (let column = 0; column < width; column++)
      marks[column] = postgres ? `$${row * width + column + 1}` : '?';
    tuples[row] = `(${marks.join(', ')})`;
  }
  const quoted = (names: readonly string[]) => names.map((name) => `"${name}"`).join(', ');
  const conflict = insert.onConflictDoNothing
    ? ` on conflict (${quoted(insert.onConflictDoNothing)}) do nothing`
    : '';
  return `insert into "${insert.table}" (${quoted(insert.columns)}) values ${tuples.join(', ')}${conflict}`;
}

/** PostgreSQL's placeholders are `$1`, `$2`…; SQLite's are `?`. */
function usesNumberedParameters(db: Kysely<Database>): boolean {
  return sql`${0}`.compile(db).sql === '$1';
}
