/**
 * How a worker shares what it takes among tenants, given the tenants of the candidates in their order
 * (the most overdue delivery first, or a run claim's turns): which to take and in which order. A tenant's
 * k-th ranks at k plus what the worker already holds for it, lowest rank first, then in the given order;
 * none beyond `tenantCap` (ranks above it are left out: a claim that has leased its rows already passes
 * `Infinity`, so that none is dropped); at most `max`. The claims' SQL (claimDueDeliveries,
 * claimStatement) ranks the same way; this is the order their rows are started in, and the fan-out's own
 * claim of new deliveries.
 */
export function fairShare(
  tenants: readonly string[],
  share: { max: number; tenantCap: number; held?: ReadonlyMap<string, number> | undefined },
): number[] {
  const counts = new Map<string, number>();
  const ranked: { n: number; rank: number }[] = [];
  tenants.forEach((tenant, n) => {
    const rank = (counts.get(tenant) ?? share.held?.get(tenant) ?? 0) + 1;
    counts.set(tenant, rank);
    if (rank <= share.tenantCap) ranked.push({ n, rank });
  });
  return ranked
    .sort((a, b) => a.rank - b.rank || a.n - b.n)
    .slice(0, Math.max(0, share.max))
    .map(({ n }) => n);
}

/**
 * The most attempts one tenant may have in flight on a worker with `slots`, when `activeTenants` tenants
 * hold work on it: an equal share with one more tenant counted than hold work, so a share is always left
 * for a tenant that has none yet (`slots / (active + 1)`, at least 1), and never more than `maxPerTenant`
 * (WEBHOOK_TENANT_CONCURRENCY). One busy tenant gets up to `maxPerTenant`; two get a third each; three a
 * quarter: however many tenants' receivers hang, the others find slots free.
 */
export function tenantShare(share: { slots: number; maxPerTenant: number; activeTenants: number }): number {
  const equal = Math.floor(share.slots / (Math.max(0, share.activeTenants) + 1));
  return Math.max(1, Math.min(share.maxPerTenant, equal));
}

/**
 * The slots of a worker kept for tenants with no attempt in flight: an attempt of a tenant that has one in
 * flight already starts only while more than these are free. A share shrinks only as attempts end, so
 * without them tenants that arrived one after another could take every slot for as long as their
 * receivers hang (the first one's larger share still in flight); with them, the next tenant's first
 * attempt starts at once. An eighth of the slots, at least one.
 */
export function reservedSlots(slots: number): number {
  return Math.max(1, Math.floor(slots / 8));
}
