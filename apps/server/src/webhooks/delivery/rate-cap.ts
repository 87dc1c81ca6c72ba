import type { Storage } from '../../storage/storage.js';
import type { ClaimedDelivery } from './delivery-claims.js';

/** What the cap allows of a batch of claimed deliveries. */
export interface RateAdmission {
  /** The deliveries to attempt, each at or after its time (Unix ms; now for an uncapped webhook's). */
  start: { delivery: ClaimedDelivery; atMs: number }[];
  /** The deliveries to give back, by the time (Unix ms) their webhook's next slot frees up. */
  later: Map<number, string[]>;
}

/**
 * Reserves start times for claimed deliveries to webhooks with a `max_deliveries_per_second` cap: each
 * capped webhook's attempts start at least `1000 / cap` ms apart (rounded up to whole ms), across every
 * instance, because the slots are reserved by advancing the webhook's `rate_next_at_ms` in one
 * transaction (its row locked with FOR UPDATE on PostgreSQL; SQLite has a single writer). Slots are
 * reserved at most `horizonMs` ahead: the deliveries beyond it are given back, due when the next slot
 * frees up, their retry schedule untouched. Uncapped webhooks' deliveries cost one indexed lookup per
 * batch and start at once.
 */
export async function reserveRateSlots(
  storage: Pick<Storage, 'db' | 'kind'>,
  claimed: readonly ClaimedDelivery[],
  nowMs: number,
  horizonMs: number,
): Promise<RateAdmission> {
  const admission: RateAdmission = { start: [], later: new Map() };
  const active = [...new Set(claimed.filter((d) => d.webhookActive).map((d) => d.webhookId))];
  const capped =
    active.length === 0
      ? []
      : await storage.db
          .selectFrom('webhooks')
          .select('id')
          .where('id', 'in', active)
          .where('max_deliveries_per_second', 'is not', null)
          .execute();
  const cappedIds = new Set(capped.map((row) => row.id));
  for (const delivery of claimed)
    if (!cappedIds.has(delivery.webhookId)) admission.start.push({ delivery, atMs: nowMs });
  if (cappedIds.size === 0) return admission;

  await storage.db.transaction().execute(async (trx) => {
    const rows = await trx
      .selectFrom('webhooks')
      .select(['id', 'max_deliveries_per_second', 'rate_next_at_ms'])
      .where('id', 'in', [...cappedIds].sort())
      .orderBy('id')
      .$if(storage.kind === 'postgres', (query) => query.forUpdate())
      .execute();
    for (const row of rows) {
      const deliveries = claimed
        .filter((d) => d.webhookId === row.id)
        .sort((a, b) => (a.dueAt < b.dueAt ? -1 : a.dueAt > b.dueAt ? 1 : 0));
      const cap = row.max_deliveries_per_second;
      if (cap === null) {
        // The cap was removed since the lookup.
        for (const delivery of deliveries) admission.start.push({ delivery, atMs: nowMs });
        continue;
      }
      const intervalMs = 1000 / cap;
      const first = Math.max(nowMs, Number(row.rate_next_at_ms ?? 0));
      let granted = 0;
      while (granted < deliveries.length && first + Math.ceil(granted * intervalMs) <= nowMs + horizonMs) {
        admission.start.push({
          delivery: deliveries[granted] as ClaimedDelivery,
          atMs: first + Math.ceil(granted * intervalMs),
        });
        granted++;
      }
      const next = first + Math.ceil(granted * intervalMs);
      const rest = deliveries.slice(granted).map((d) => d.id);
      if (rest.length > 0) admission.later.set(next, [...(admission.later.get(next) ?? []), ...rest]);
      await trx.updateTable('webhooks').set({ rate_next_at_ms: next }).where('id', '=', row.id).execute();
    }
  });
  return admission;
}
