import { type SelectQueryBuilder, sql } from 'kysely';

/** The page size when `limit` is absent (the contract's default). */
export const DEFAULT_PAGE_LIMIT = 20;

/** A keyset page to read: its size and the id to continue below. */
export interface PageRequest {
  limit: number;
  /** The last id of the previous page; the page holds the ids below it (lists are newest first). */
  before: string | undefined;
}

/** A page of a list: `{data, next_cursor}`. */
export interface Page<T> {
  data: T[];
  next_cursor: string | null;
}

const ID_PATTERN = /^[a-z]{2,5}_[0-9A-HJKMNP-TV-Z]{26}$/;

/** The opaque cursor after `id`: base64url of the id, so clients do not build cursors by hand. */
export function encodeCursor(id: string): string {
  return Buffer.from(id, 'utf8').toString('base64url');
}

/**
 * The id a cursor of {@link encodeCursor} continues below, or undefined when it is not a cursor of a list
 * of `idPrefix` ids (one this server did not make). Ids are ULIDs, sortable by creation time, so a cursor
 * is simply the last id seen.
 */
export function decodeCursor(cursor: string, idPrefix: string): string | undefined {
  const before = Buffer.from(cursor, 'base64url').toString('utf8');
  return ID_PATTERN.test(before) && before.startsWith(`${idPrefix}_`) ? before : undefined;
}

/**
 * Narrows a list query over a table with ULID `id`s to one keyset page, newest first: the ids below the
 * cursor, in descending order, `limit + 1` rows (the extra one only says that another page exists).
 */
export function keysetPage<DB, TB extends keyof DB, O>(
  query: SelectQueryBuilder<DB, TB, O>,
  page: PageRequest,
): SelectQueryBuilder<DB, TB, O> {
  const id = sql.ref('id');
  return query
    .$if(page.before !== undefined, (below) => below.where(id, '<', page.before))
    .orderBy(id, 'desc')
    .limit(page.limit + 1);
}

/** The cursor after a row whose `id` orders the list: the usual `cursorOf` of {@link toPage}. */
export function idCursor(row: { id: string }): string {
  return encodeCursor(row.id);
}

/**
 * Turns `limit + 1` rows into a page: the extra row only says that another page exists, and the next
 * cursor is `cursorOf` the last row shown.
 */
export function toPage<Row, T>(
  rows: readonly Row[],
  limit: number,
  view: (row: Row) => T,
  cursorOf: (row: Row) => string,
): Page<T> {
  const shown = rows.slice(0, limit);
  const last = shown.at(-1);
  return {
    data: shown.map(view),
    next_cursor: rows.length > limit && last !== undefined ? cursorOf(last) : null,
  };
}
