/** Counts by tenant (deliveries held, attempts in flight); a tenant at zero is not kept. */
export class TenantCounts {
  readonly #counts = new Map<string, number>();

  get(tenantId: string): number {
    return this.#counts.get(tenantId) ?? 0;
  }

  /** How many tenants have a count. */
  get size(): number {
    return this.#counts.size;
  }

  add(tenantId: string): void {
    this.#counts.set(tenantId, this.get(tenantId) + 1);
  }

  remove(tenantId: string): void {
    const count = this.get(tenantId) - 1;
    if (count > 0) this.#counts.set(tenantId, count);
    else this.#counts.delete(tenantId);
  }

  entries(): IterableIterator<[string, number]> {
    return this.#counts.entries();
  }

  /** The counts now, as a claim takes them (they change while it is on its way). */
  snapshot(): Map<string, number> {
    return new Map(this.#counts);
  }
}
