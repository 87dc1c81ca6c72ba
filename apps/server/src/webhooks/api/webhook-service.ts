import type {
  RegisteredWebhook,
  RegisterWebhookRequest,
  RotatedSecret,
  RotateSecretRequest,
  UpdateWebhookRequest,
  Webhook,
} from '@scenario-scoring/api-types';
import type { Transaction } from 'kysely';
import type { Clock } from '../../common/clock.js';
import { newId } from '../../common/ids.js';
import { AppError } from '../../errors/app-error.js';
import type { OutboxSignal } from '../../events/event-outbox.js';
import { type IdempotentResult, idempotentCreate } from '../../idempotency/idempotent-create.js';
import type { TenantKeyedHash } from '../../keys/tenant-keyed-hash.js';
import { rowBytes, usageUpserts } from '../../quota/tenant-usage.js';
import { describeError, type Logger } from '../../request-logging/logger.js';
import type { Database } from '../../storage/database.js';
import { idCursor, type Page, type PageRequest, toPage } from '../../storage/paging.js';
import type { Storage } from '../../storage/storage.js';
import { checkEventFilter } from '../event-filter.js';
import {
  checkWebhookUrl,
  type OutboundPolicyConfig,
  type ResolveHost,
} from '../outbound/outbound-address-policy.js';
import type { SecretBox } from '../outbound/secret-box.js';
import { generateWebhookSecret } from '../outbound/webhook-signature.js';
import { DEFAULT_MAX_WEBHOOKS_PER_TENANT, type WebhookConfig } from '../webhook-config.js';
import { cancelBacklog, cancelPendingDeliveries, type RetiredWebhookSignal } from '../webhook-registry.js';
import { checkRegistrationReplay } from './registration-replay.js';
import {
  countWebhooksForInsert,
  findWebhook,
  insertNewWebhook,
  listWebhookRows,
  rotateSecretRows,
  updateWebhookRow,
  type WebhookRow,
} from './webhook-store.js';
import { toWebhook } from './webhook-views.js';

/** What the webhook use cases need. */
export interface WebhookServiceDeps {
  storage: Pick<Storage, 'db' | 'kind'>;
  /** Notified after a manual attempt is queued, so this instance's delivery workers send it at once. */
  outbox: Pick<OutboxSignal, 'notify'>;
  /**
   * Notified once a webhook's deletion or disabling commits, before the answer, so this instance's delivery
   * workers drop what they claimed of it and have not started (none is attempted after the answer).
   */
  retired: Pick<RetiredWebhookSignal, 'notify'>;
  /** Outbound safety, and the per-tenant limit (`maxWebhooksPerTenant`, default 50). */
  policy: OutboundPolicyConfig & Partial<Pick<WebhookConfig, 'maxWebhooksPerTenant'>>;
  secretBox: SecretBox;
  clock: Clock;
  /** The tenant-keyed hash the idempotency records' request hashes are made with. */
  keyedHash: Pick<TenantKeyedHash, 'hash'>;
  /** How registration resolves host names; the system resolver by default. */
  resolve?: ResolveHost;
  /** Where a background cancellation of a deleted or disabled webhook's backlog reports a failure. */
  logger?: Pick<Logger, 'error'>;
}

/** Who is asking: the tenant and the API key (idempotency keys are per API key). */
export interface Caller {
  tenantId: string;
  keyId: string;
}

/** How long the previous secret keeps signing after a rotation when the request does not say. */
export const DEFAULT_GRACE_PERIOD_SECONDS = 86_400;

/** The webhook, or 404 `not_found` (unknown, deleted, or another tenant's: they look the same). */
export async function requireWebhook(
  db: WebhookServiceDeps['storage']['db'] | Transaction<Database>,
  tenantId: string,
  id: string,
): Promise<WebhookRow> {
  const row = await findWebhook(db, tenantId, id);
  if (!row) throw new AppError('not_found', { detail: `No webhook ${id} exists for this API key.` });
  return row;
}

/**
 * Refuses a registration beyond the tenant's limit with 422 `webhook_limit_reached`, so one tenant cannot
 * turn one event into hundreds of signed POSTs against a third party by registering its URL again. Disabled
 * webhooks count too, so re-enabling one with PATCH can never exceed the limit.
 */
async function checkWebhookLimit(
  trx: Transaction<Database>,
  kind: Storage['kind'],
  tenantId: string,
  max: number,
): Promise<void> {
  const count = await countWebhooksForInsert(trx, kind, tenantId);
  if (count >= max) {
    throw new AppError('webhook_limit_reached', {
      detail: `This tenant already has ${count} webhooks, the most it may have (${max}); delete one first.`,
    });
  }
}

/**
 * Registers a webhook: checks its events and URL (outbound safety), then stores it with its secret
 * sealed, under the request's Idempotency-Key (a replay is not checked again). The secret is in this
 * response only.
 */
export async function registerWebhook(
  deps: WebhookServiceDeps,
  caller: Caller,
  request: { body: RegisterWebhookRequest; idempotencyKey: string | undefined },
): Promise<IdempotentResult<RegisteredWebhook>> {
  const { body } = request;
  const now = deps.clock.now();
  // The URL as checked and as deliveries go to it (set by `validate`, which runs before the create).
  let canonicalUrl: string | undefined;
  const scope = {
    apiKeyId: caller.keyId,
    tenantId: caller.tenantId,
    keyedHash: deps.keyedHash,
    key: request.idempotencyKey,
    operation: 'registerWebhook',
    body,
    // The replayable response holds the secret: the idempotency record keeps it sealed too.
    protect: deps.secretBox,
    // Only a request that is not a replay is checked: a retry gets its replay even if DNS changed since.
    validate: async () => {
      checkEventFilter(body.events);
      const verdict = await checkWebhookUrl(body.url, deps.policy, deps.resolve);
      if (!verdict.allowed) throw new AppError('webhook_url_refused', { detail: `${verdict.reason}.` });
      canonicalUrl = verdict.url;
    },
  };
  const outcome = await idempotentCreate(deps.storage.db, scope, now, async (trx) => {
    const max = deps.policy.maxWebhooksPerTenant ?? DEFAULT_MAX_WEBHOOKS_PER_TENANT;
    await checkWebhookLimit(trx, deps.storage.kind, caller.tenantId, max);
    if (canonicalUrl === undefined) throw new Error('the webhook URL was not checked before the create');
    const secret = generateWebhookSecret();
    const row = await insertNewWebhook(
      trx,
      {
        tenantId: caller.tenantId,
        url: canonicalUrl,
        events: body.events,
        description: body.description,
        maxDeliveriesPerSecond: body.max_deliveries_per_second,
      },
      deps.secretBox.seal(secret),
      now,
    );
    const bytes = rowBytes(row.url, row.events, row.description) + rowBytes(deps.secretBox.seal(secret));
    for (const query of usageUpserts(trx, caller.tenantId, bytes, now)) await trx.executeQuery(query);
    const { updated_at: _, disabled_reason: __, ...shown } = toWebhook(row);
    const registered: RegisteredWebhook = { ...shown, status: 'active', secret };
    return registered;
  });
  await checkRegistrationReplay(deps.storage, deps.secretBox, caller.tenantId, outcome, now);
  return outcome;
}

/** A page of the tenant's webhooks, newest first. */
export async function listWebhooks(
  deps: WebhookServiceDeps,
  tenantId: string,
  page: PageRequest,
): Promise<Page<Webhook>> {
  return toPage(await listWebhookRows(deps.storage.db, tenantId, page), page.limit, toWebhook, idCursor);
}

/**
 * Changes a webhook's events, description or status. `active` re-enables it (and forgets why it was
 * disabled and since when it was failing); `disabled` pauses it and cancels its pending deliveries, those
 * this instance's workers hold claimed and have not started included (see WebhookServiceDeps.retired).
 */
export async function updateWebhook(
  deps: WebhookServiceDeps,
  tenantId: string,
  id: string,
  body: UpdateWebhookRequest,
): Promise<Webhook> {
  if (body.events !== undefined) checkEventFilter(body.events);
  const at = deps.clock.now().toISOString();
  if (body.status === 'active') {
    // What its disabling left to cancel in the background (see cancelPendingDeliveries) is cancelled
    // first, a short transaction per batch, while it is still disabled: re-enabled, it would be attempted.
    const before = await requireWebhook(deps.storage.db, tenantId, id);
    if (before.status === 'disabled')
      await cancelBacklog(deps.storage, id, () => deps.clock.now().toISOString());
  }
  let backlog: string | undefined;
  const updated = await deps.storage.db.transaction().execute(async (trx) => {
    const row = await requireWebhook(trx, tenantId, id);
    const changes: Parameters<typeof updateWebhookRow>[2] = { updated_at: at };
    if (body.events !== undefined) changes.events = JSON.stringify(body.events);
    if (body.description !== undefined) changes.description = body.description;
    if (body.max_deliveries_per_second !== undefined)
      changes.max_deliveries_per_second = body.max_deliveries_per_second;
    if (body.status === 'active' && row.status !== 'active') {
      Object.assign(changes, { status: 'active', disabled_reason: null, failing_since: null });
    }
    if (body.status === 'disabled') {
      // An already disabled webhook keeps the reason it was disabled for (endpoint_gone says more).
      if (row.status !== 'disabled')
        Object.assign(changes, { status: 'disabled', disabled_reason: 'manual' });
    }
    const webhook = toWebhook(await updateWebhookRow(trx, id, changes));
    // The first batch with the change; the rest right after it (never attempted meanwhile).
    if (body.status === 'disabled') backlog = (await cancelPendingDeliveries(trx, id, at)).next;
    return webhook;
  });
  if (body.status === 'disabled') deps.retired.notify([id]);
  if (backlog !== undefined) cancelRestInBackground(deps, id, backlog);
  return updated;
}

/**
 * Deletes a webhook (it then answers 404) and cancels the deliveries not yet made to it, those this
 * instance's workers hold claimed and have not started included (see WebhookServiceDeps.retired).
 */
export async function deleteWebhook(deps: WebhookServiceDeps, tenantId: string, id: string): Promise<void> {
  const at = deps.clock.now().toISOString();
  const backlog = await deps.storage.db.transaction().execute(async (trx) => {
    await requireWebhook(trx, tenantId, id);
    await updateWebhookRow(trx, id, { deleted_at: at, updated_at: at });
    // The first batch with the deletion; the rest right after it (never attempted meanwhile).
    return (await cancelPendingDeliveries(trx, id, at)).next;
  });
  deps.retired.notify([id]);
  if (backlog !== undefined) cancelRestInBackground(deps, id, backlog);
}

/**
 * Cancels the rest of a deleted or disabled webhook's pending deliveries after the answer, in short
 * transactions (see cancelBacklog). Should this fail or the process stop first, those deliveries stay
 * listed `pending` but are never attempted: a claim cancels them (and re-enabling cancels them first).
 */
function cancelRestInBackground(deps: WebhookServiceDeps, id: string, after: string): void {
  cancelBacklog(deps.storage, id, () => deps.clock.now().toISOString(), after).catch((error: unknown) => {
    deps.logger?.error('could not cancel the pending deliveries of a deleted or disabled webhook', {
      webhookId: id,
      error: describeError(error),
    });
  });
}

/**
 * Issues a new secret; the previous ones keep signing beside it for `grace_period_seconds` at most (0
 * retires them now), and at most 5 old secrets keep signing, the oldest retiring first.
 */
export async function rotateWebhookSecret(
  deps: WebhookServiceDeps,
  tenantId: string,
  id: string,
  body: RotateSecretRequest | undefined,
): Promise<RotatedSecret> {
  const now = deps.clock.now();
  const graceSeconds = body?.grace_period_seconds ?? DEFAULT_GRACE_PERIOD_SECONDS;
  const oldExpiresAt = new Date(now.getTime() + graceSeconds * 1000).toISOString();
  const secret = generateWebhookSecret();
  await deps.storage.db.transaction().execute(async (trx) => {
    await requireWebhook(trx, tenantId, id);
    const next = { id: newId('sec'), ciphertext: deps.secretBox.seal(secret) };
    await rotateSecretRows(trx, id, next, { now: now.toISOString(), oldExpiresAt });
  });
  return { id, secret, previous_secret_expires_at: oldExpiresAt };
}
