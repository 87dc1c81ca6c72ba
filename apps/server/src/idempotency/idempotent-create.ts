import { createHash } from 'node:crypto';
import { canonicalBytes } from '@scenario-scoring/engine';
import type { Kysely, Transaction } from 'kysely';
import { AppError } from '../errors/app-error.js';
import type { TenantKeyedHash } from '../keys/tenant-keyed-hash.js';
import { rowBytes, usageUpserts } from '../quota/tenant-usage.js';
import type { Database } from '../storage/database.js';

/** How long the first response to a key is kept and replayed (Stripe: 24 hours). */
export const IDEMPOTENCY_KEY_TTL_MS = 24 * 60 * 60 * 1000;

/** What identifies a create for idempotency: the API key, its `Idempotency-Key`, the operation and body. */
export interface IdempotencyScope {
  apiKeyId: string;
  /** The caller's tenant: the request hash is keyed per tenant, and the stored answer counts in its usage. */
  tenantId: string;
  /** The deployment's tenant-keyed hash (keys/tenant-keyed-hash.ts), which the request hash is made with. */
  keyedHash: Pick<TenantKeyedHash, 'hash'>;
  /** The request's `Idempotency-Key`; undefined makes the create an ordinary one. */
  key: string | undefined;
  operation: string;
  body: unknown;
  /**
   * Encrypts the stored response when it holds a secret (a webhook's signing secret): the record then
   * keeps only ciphertext, and a replay opens it.
   */
  protect?: { seal(text: string): string; open(sealed: string): string };
  /**
   * Checks the request (throwing its error) once no earlier response to replay was found, before the
   * transaction: a retry is answered by its replay, and a reused key by `idempotency_key_reused`, even when
   * the check would now fail (a webhook URL whose host no longer resolves).
   */
  validate?: () => Promise<void> | void;
}

/**
 * What a create made, or what an earlier request with the same key made: `value` is what the service
 * returns, `bodyJson` its JSON text byte for byte as the first response sent it (a replay sends these bytes
 * again), `replayed` whether it is an earlier request's.
 */
export interface IdempotentResult<T> {
  value: T;
  bodyJson: string;
  replayed: boolean;
}

/**
 * Runs `create` (after `scope.validate`) in a transaction that also records its response under the request's `Idempotency-Key`,
 * so a create and its idempotency record commit together: a retry after a crash either finds both or
 * neither. A repeat with the same key and body gets the first create's value and its JSON unchanged; another body is refused with
 * 422 `idempotency_key_reused`. Two concurrent requests with one key: the second's insert waits on the
 * primary key, fails once the first commits, and replays the first's response.
 */
export async function idempotentCreate<T>(
  db: Kysely<Database>,
  scope: IdempotencyScope,
  now: Date,
  create: (trx: Transaction<Database>) => Promise<T>,
): Promise<IdempotentResult<T>> {
  if (scope.key === undefined) {
    await scope.validate?.();
    const value = await db.transaction().execute(create);
    return { value, bodyJson: JSON.stringify(value), replayed: false };
  }
  const key = scope.key;
  const requestHash = hashRequest(scope);
  const cutoff = new Date(now.getTime() - IDEMPOTENCY_KEY_TTL_MS).toISOString();
  const earlier = await findResponse(db, scope.apiKeyId, key, cutoff);
  if (earlier) return replay<T>(earlier, requestHash, scope);
  await scope.validate?.();
  try {
    return await db.transaction().execute(async (trx) => {
      const value = await create(trx);
      const bodyJson = JSON.stringify(value);
      await trx
        .deleteFrom('idempotency_keys')
        .where('api_key_id', '=', scope.apiKeyId)
        .where('key', '=', key)
        .where('created_at', '<', cutoff)
        .execute();
      const row = {
        api_key_id: scope.apiKeyId,
        key,
        operation: scope.operation,
        request_hash: requestHash,
        // The reply's status and headers are the route's, made from the value: these columns of
        // records written before are no longer read.
        response_status: 0,
        response_headers: '{}',
        response_body: scope.protect ? scope.protect.seal(bodyJson) : bodyJson,
        created_at: now.toISOString(),
      };
      await trx.insertInto('idempotency_keys').values(row).execute();
      const bytes = rowBytes(row.key, row.request_hash, row.response_headers, row.response_body);
      for (const query of usageUpserts(trx, scope.tenantId, bytes, now)) await trx.executeQuery(query);
      return { value, bodyJson, replayed: false };
    });
  } catch (error) {
    // A concurrent request with the same key committed first: its response is the answer.
    const winner = await findResponse(db, scope.apiKeyId, key, cutoff).catch(() => undefined);
    if (winner) return replay<T>(winner, requestHash, scope);
    throw error;
  }
}

interface StoredResponse {
  request_hash: string;
  operation: string;
  response_body: string;
}

async function findResponse(
  db: Kysely<Database>,
  apiKeyId: string,
  key: string,
  cutoff: string,
): Promise<StoredResponse | undefined> {
  return db
    .selectFrom('idempotency_keys')
    .select(['request_hash', 'operation', 'response_body'])
    .where('api_key_id', '=', apiKeyId)
    .where('key', '=', key)
    .where('created_at', '>=', cutoff)
    .executeTakeFirst();
}

function replay<T>(
  stored: StoredResponse,
  requestHash: string,
  scope: IdempotencyScope,
): IdempotentResult<T> {
  const { key, protect } = scope;
  // A key stored before request hashes were keyed per tenant holds the unkeyed form: it is taken too, so a
  // retry across the upgrade (within the 24 hours a key lives) still replays.
  if (stored.request_hash !== requestHash && stored.request_hash !== unkeyedRequestHash(scope)) {
    throw new AppError('idempotency_key_reused', {
      detail: `The Idempotency-Key "${key}" was already used with another request (${stored.operation}) in the last 24 hours; use a new key for a new request.`,
    });
  }
  const bodyJson = protect ? protect.open(stored.response_body) : stored.response_body;
  return { value: JSON.parse(bodyJson) as T, bodyJson, replayed: true };
}

/**
 * The tenant-keyed hash (HMAC-SHA256 under the tenant's `idempotency-request` key) of the operation and
 * the RFC 8785 canonical body, so key order and spacing do not matter, and no one without the
 * deployment's secret can confirm a guessed body (it holds a subject) from the stored hash.
 */
function hashRequest(scope: IdempotencyScope): string {
  return scope.keyedHash.hash('idempotency-request', scope.tenantId, requestBytes(scope));
}

/** The form of request hashes stored before they were keyed: a plain SHA-256 of the same bytes. */
function unkeyedRequestHash(scope: IdempotencyScope): string {
  return createHash('sha256').update(requestBytes(scope)).digest('hex');
}

function requestBytes(scope: IdempotencyScope): Buffer {
  return Buffer.concat([Buffer.from(`${scope.operation}\n`), canonicalBytes(scope.body ?? null)]);
}
