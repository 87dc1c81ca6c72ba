/**
 * `items` in consecutive slices of at most `size`: multi-row INSERTs stay below both dialects' limits on
 * bound parameters (SQLite 32766, PostgreSQL 65535) however many rows a transaction writes.
 */
export function* chunks<T>(items: readonly T[], size: number): Generator<T[]> {
  for (let start = 0; start < items.length; start += size) yield items.slice(start, start + size);
}
