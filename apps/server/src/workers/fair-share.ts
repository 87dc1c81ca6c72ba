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
