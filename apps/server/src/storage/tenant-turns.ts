import { type RawBuilder, sql } from 'kysely';

/**
 * The tenants having rows of `table` that `having` admits (a condition on the alias `u`), taken in turn: in
 * tenant id order from the first after `cursor`, then from the first up to `cursor`, `walk` each way, an
 * index probe each. Three common table expressions (`after_cursor`, `from_start`, and `walked(tenant_id,
 * turn)`, the tenants in the order they are served) for a `with recursive` of the caller's; run claims
 * (runs/run-claims.ts) and the webhook fan-out (event-dispatcher.ts) share tenants with it.
 */
export function tenantTurns(options: {
  table: 'runs' | 'events';
  having: RawBuilder<unknown>;
  cursor: string;
  walk: number;
  postgres: boolean;
}): RawBuilder<unknown> {
  const { having, cursor, walk, postgres } = options;
  const table = sql.table(options.table);
  const next = (from: RawBuilder<unknown>) =>
    postgres
      ? sql`(select u.tenant_id from ${table} as u where ${having} and u.tenant_id > ${from} order by u.tenant_id limit 1)`
      : sql`(select min(u.tenant_id) from ${table} as u where ${having} and u.tenant_id > ${from})`;
  const first = postgres
    ? sql`(select u.tenant_id from ${table} as u where ${having} order by u.tenant_id limit 1)`
    : sql`(select min(u.tenant_id) from ${table} as u where ${having})`;
  return sql`
    after_cursor(tenant_id, n) as (
      select ${next(sql`${cursor}`)}, 1
      union all
      select ${next(sql`w.tenant_id`)}, w.n + 1 from after_cursor as w
      where w.tenant_id is not null and w.n < ${walk}
    ),
    from_start(tenant_id, n) as (
      select ${first}, 1
      union all
      select ${next(sql`w.tenant_id`)}, w.n + 1 from from_start as w
      where w.tenant_id is not null and w.tenant_id < ${cursor} and w.n < ${walk}
    ),
    walked(tenant_id, turn) as (
      select tenant_id, n from after_cursor where tenant_id is not null
      union all
      select tenant_id, ${walk} + n from from_start where tenant_id is not null and tenant_id <= ${cursor}
    )`;
}
