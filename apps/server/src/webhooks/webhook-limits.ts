import type { Transaction } from 'kysely';
import { AppError } from '../errors/app-error.js';
import type { Database } from '../storage/database.js';

/** The default of `WEBHOOK_MAX_PER_TENANT`: webhooks (active or disabled, not deleted) one tenant may have. */
export const DEFAULT_MAX_WEBHOOKS_PER_TENANT = 50;
/** The default of `WEBHOOK_MAX_FANOUT`: the webhooks one event fans out to, oldest first. */
export const DEFAULT_MAX_DELIVERIES_PER_EVENT = 50;

/**
 * Refuses a registration beyond the tenant's limit with 422 `webhook_limit_reached` (defect #7: 300
 * registrations of one URL turned one event into 300 signed POSTs against a third party). Disabled
 * webhooks count too, so re-enabling one with PATCH can never exceed the limit.
 */
export async function checkWebhookLimit(
  trx: Transaction<Database>,
  tenantId: string,
  max: number,
): Promise<void> {
  const { count } = await trx
    .selectFrom('webhooks')
    .select((eb) => eb.fn.countAll<string | number>().as('count'))
    .where('tenant_id', '=', tenantId)
    .where('deleted_at', 'is', null)
    .executeTakeFirstOrThrow();
  if (Number(count) >= max) {
    throw new AppError('webhook_limit_reached', {
      detail: `This tenant already has ${Number(count)} webhooks, the most it may have (${max}); delete one first.`,
    });
  }
}
