interface Entry<V> {
  value: V;
  expiresAt: number;
}

/**
 * A small LRU map with a time to live: a Map keeps insertion order, so re-inserting on read makes the first
 * key the least recently used one. The TTL bounds how long a change made elsewhere (a key revoked by
 * another instance or the CLI) can go unseen.
 */
export class BoundedCache<K, V> {
  readonly #entries = new Map<K, Entry<V>>();
  readonly #maxEntries: number;
  readonly #ttlMs: number;
  readonly #now: () => number;

  constructor(options: { maxEntries: number; ttlMs: number; now?: () => number }) {
    this.#maxEntries = options.maxEntries;
    this.#ttlMs = options.ttlMs;
    this.#now = options.now ?? Date.now;
  }

  /** The live value for `key`, marking it most recently used; undefined when absent or expired. */
  get(key: K): V | undefined {
    const entry = this.#entries.get(key);
    if (!entry) return undefined;
    this.#entries.delete(key);
    if (entry.expiresAt <= this.#now()) return undefined;
    this.#entries.set(key, entry);
    return entry.value;
  }

  /** Stores `value`, evicting the least recently used entry when full. */
  set(key: K, value: V): void {
    this.#entries.delete(key);
    this.#entries.set(key, { value, expiresAt: this.#now() + this.#ttlMs });
    if (this.#entries.size > this.#maxEntries) {
      const oldest = this.#entries.keys().next();
      if (!oldest.done) this.#entries.delete(oldest.value);
    }
  }

  /** Removes the entry of `key`, if any. */
  delete(key: K): void {
    this.#entries.delete(key);
  }

  /** Removes every entry whose value matches. */
  deleteWhere(predicate: (value: V) => boolean): void {
    for (const [key, entry] of this.#entries) if (predicate(entry.value)) this.#entries.delete(key);
  }

  get size(): number {
    return this.#entries.size;
  }
}
