/**
 * Commits `items` with `commit` so that one item that cannot be committed never fails the others: the
 * whole batch first; if that fails, each half on its own, down to the failing items alone (one bad item
 * among n costs about 2·log2(n) extra transactions). Resolves with each item's error, undefined for the
 * committed ones. When the database itself is down every item ends with an error, after at most 2n - 1
 * attempts, all failing fast.
 */
export async function commitIsolated<T>(
  commit: (batch: readonly T[]) => Promise<void>,
  items: readonly T[],
): Promise<unknown[]> {
  try {
    await commit(items);
    return items.map(() => undefined);
  } catch (error) {
    if (items.length === 1) return [error];
    const middle = items.length >> 1;
    // One half after the other: on SQLite a single connection serializes them anyway.
    const first = await commitIsolated(commit, items.slice(0, middle));
    const second = await commitIsolated(commit, items.slice(middle));
    return [...first, ...second];
  }
}
