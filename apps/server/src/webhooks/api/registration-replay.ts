import { AppError } from '../../errors/app-error.js';
import type { IdempotentResult } from '../../idempotency/idempotent-create.js';
import type { Storage } from '../../storage/storage.js';
import type { SecretBox } from '../outbound/secret-box.js';
import { loadSigningSecrets } from '../webhook-registry.js';
import { findWebhook } from './webhook-store.js';

/**
 * Checks a replayed registration before it is sent: a replay never hands out a secret that no longer
 * signs. The webhook deleted since → 404 `not_found`, as a read answers. Its secret rotated since
 * and out of its grace period → 409 `idempotent_replay_unavailable` (the registration did happen: read the
 * webhook, or rotate to get a secret). Otherwise the first response is replayed unchanged.
 */
export async function checkRegistrationReplay(
  storage: Pick<Storage, 'db'>,
  secretBox: SecretBox,
  tenantId: string,
  outcome: IdempotentResult<{ id: string; secret: string }>,
  now: Date,
): Promise<void> {
  if (!outcome.replayed) return;
  const { id, secret } = outcome.value;
  if ((await findWebhook(storage.db, tenantId, id)) === undefined) {
    throw new AppError('not_found', {
      detail: `The webhook ${id} this Idempotency-Key registered has been deleted since.`,
    });
  }
  const signing = await loadSigningSecrets(storage, secretBox, [id], now.toISOString());
  if (!(signing.get(id) ?? []).includes(secret)) {
    throw new AppError('idempotent_replay_unavailable', {
      detail: `The webhook ${id} this Idempotency-Key registered exists, but its secret was rotated since and no longer signs, so the response is not replayed; read the webhook with GET /v1/webhooks/${id}, or rotate its secret to get a new one.`,
      headers: { Location: `/v1/webhooks/${id}` },
    });
  }
}
