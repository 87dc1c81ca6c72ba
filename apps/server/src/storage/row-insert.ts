import { CompiledQuery, type Kysely, sql } from 'kysely';
import type { Database } from './database.js';

/** A multi-row INSERT's shape: its table, its columns in order, and what a conflict on `onConflictDoNothing` does. */
export interface RowInsert<Row> {
  table: keyof Database & string;
  columns: readonly (keyof Row & string)[];
  /** Columns of a unique key: a row already present there is left alone (`on conflict (…) do nothing`). */
  onConflictDoNothing?: readonly (keyof Row & string)[];
  /** Columns of the inserted rows the statement returns (`returning …`). */
  returning?: readonly (keyof Row & string)[];
  /**
   * A SQL function each row's value of a column goes through (`log_record_pack(?)`: SQLite's thread packs
   * a log record as it is inserted, see score-log-store.ts). Not for the `shared` columns.
   */
  through?: Partial<Record<keyof Row & string, string>>;
}

/** SQL texts made so far, by dialect, shape and row count: a run's batches repeat the same few. */
const texts = new Map<string, string>();
const MAX_TEXTS = 256;

/**
 * Inserts `rows` in one statement whose text is made once per shape and row count, and whose parameters
 * are the rows' values in column order: the same statement Kysely's query builder makes, without
 * building and compiling a query tree of thousands of value nodes each time (a run batch's INSERTs
 * carry 5,000 to 7,000 parameters). The caller keeps `rows.length × columns` below the dialect's limit
 * on bound parameters (SQLite 32766, PostgreSQL 65535). With `shared`, columns that may hold one value in
 * every row (see `rowInsertQuery`).
 */
export async function insertRows<Row extends object>(
  db: Kysely<Database>,
  insert: RowInsert<Row>,
  rows: readonly Row[],
  shared: readonly (keyof Row & string)[] = [],
): Promise<void> {
  if (rows.length === 0) return;
  await db.executeQuery(rowInsertQuery(db, insert, rows, shared));
}

/**
 * The statement `insertRows` runs (every column of `insert.columns` given for each row; undefined is NULL).
 * When every row holds the same value in each of the `shared` columns (a run batch's run id, tenant and
 * time), that value is one numbered parameter (`?1`, `$1`) which every row refers to (see `sharedInsertText`): it is cloned to the
 * SQLite thread, or encoded for PostgreSQL, and bound once instead of once per row. Otherwise (a single row,
 * rows that differ there, or no `shared`) the text is Kysely's.
 */
export function rowInsertQuery<Row extends object>(
  db: Kysely<Database>,
  insert: RowInsert<Row>,
  rows: readonly Row[],
  shared: readonly (keyof Row & string)[] = [],
): CompiledQuery {
  const postgres = usesNumberedParameters(db);
  const first = rows[0] as Record<string, unknown> | undefined;
  const sharing =
    shared.length > 0 &&
    rows.length > 1 &&
    first !== undefined &&
    rows.every((row) => shared.every((column) => (row as Record<string, unknown>)[column] === first[column]));
  const once = sharing ? insert.columns.filter((column) => shared.includes(column)) : [];
  const perRow = sharing ? insert.columns.filter((column) => !shared.includes(column)) : insert.columns;
  const through = insert.through ? JSON.stringify(insert.through) : '';
  const key = `${postgres ? 'pg' : 'lite'} ${insert.table} ${insert.columns.join(',')} ${insert.onConflictDoNothing?.join(',') ?? ''} ${insert.returning?.join(',') ?? ''} ${through} ${rows.length} ${once.join(',')}`;
  let text = texts.get(key);
  if (text === undefined) {
    text = sharing
      ? sharedInsertText(insert, once, rows.length, postgres)
      : insertText(insert, rows.length, postgres);
    if (texts.size >= MAX_TEXTS) texts.clear();
    texts.set(key, text);
  }
  const parameters: unknown[] = new Array(once.length + rows.length * perRow.length);
  let n = 0;
  for (const column of once) parameters[n++] = first?.[column] ?? null;
  for (const row of rows) {
    for (const column of perRow) parameters[n++] = (row as Record<string, unknown>)[column] ?? null;
  }
  return CompiledQuery.raw(text, parameters);
}

/**
 * The text where the `once` columns come first, each one numbered parameter that every row refers to
 * (`?1`, `$1`…), and each row's own values follow. On SQLite those are bare `?`, which SQLite numbers on
 * from the largest number so far: node:sqlite binds a statement of thousands of numbered parameters
 * far slower than bare ones (it looks each one's name up), so only the shared ones are numbered.
 */
function sharedInsertText<Row>(
  insert: RowInsert<Row>,
  once: readonly string[],
  rowCount: number,
  postgres: boolean,
): string {
  const own = insert.columns.filter((column) => !once.includes(column));
  const shared = once.map((_, i) => (postgres ? `$${i + 1}` : `?${i + 1}`));
  const tuples: string[] = new Array(rowCount);
  for (let row = 0; row < rowCount; row++) {
    const first = once.length + row * own.length + 1;
    const marks = own.map((column, i) => passed(insert, column, postgres ? `$${first + i}` : '?'));
    tuples[row] = `(${[...shared, ...marks].join(', ')})`;
  }
  return `insert into "${insert.table}" (${quoted([...once, ...own])}) values ${tuples.join(', ')}${endClauses(insert)}`;
}

function insertText<Row>(insert: RowInsert<Row>, rowCount: number, postgres: boolean): string {
  const width = insert.columns.length;
  const tuples: string[] = new Array(rowCount);
  for (let row = 0; row < rowCount; row++) {
    const marks: string[] = new Array(width);
    for (let column = 0; column < width; column++)
      marks[column] = passed(
        insert,
        insert.columns[column] as string,
        postgres ? `$${row * width + column + 1}` : '?',
      );
    tuples[row] = `(${marks.join(', ')})`;
  }
  return `insert into "${insert.table}" (${quoted(insert.columns)}) values ${tuples.join(', ')}${endClauses(insert)}`;
}

/** A value's placeholder, through the column's function if it has one (`RowInsert.through`). */
function passed<Row>(insert: RowInsert<Row>, column: string, mark: string): string {
  const through = (insert.through as Record<string, string> | undefined)?.[column];
  return through === undefined ? mark : `${through}(${mark})`;
}

function quoted(names: readonly string[]): string {
  return names.map((name) => `"${name}"`).join(', ');
}

/** What follows the rows: `on conflict (…) do nothing`, `returning …`. */
function endClauses<Row>(insert: RowInsert<Row>): string {
  const conflict = insert.onConflictDoNothing
    ? ` on conflict (${quoted(insert.onConflictDoNothing)}) do nothing`
    : '';
  return insert.returning ? `${conflict} returning ${quoted(insert.returning)}` : conflict;
}

const numbered = new WeakMap<Kysely<Database>, boolean>();

/** Whether `db` speaks PostgreSQL's placeholders (`$1`, `$2`…) rather than SQLite's (`?`); asked once per `db`. */
export function usesNumberedParameters(db: Kysely<Database>): boolean {
  let answer = numbered.get(db);
  if (answer === undefined) {
    answer = sql`${0}`.compile(db).sql === '$1';
    numbered.set(db, answer);
  }
  return answer;
}
