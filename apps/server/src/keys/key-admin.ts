import type { Kysely } from 'kysely';
import type { Database } from '../storage/database.js';
import { API_KEY_PATTERN, hashApiKey } from './api-key.js';

/** A key as an operator sees it: never the key itself (only its hash is stored). */
export interface KeyListing {
  id: string;
  tenant: string;
  createdAt: string;
  revokedAt: string | null;
}

/** Every key, oldest first, optionally of one tenant; revoked keys too unless `activeOnly`. */
export async function listKeys(
  db: Kysely<Database>,
  filter: { tenant?: string | undefined; activeOnly?: boolean } = {},
): Promise<KeyListing[]> {
  let query = db
    .selectFrom('api_keys')
    .select(['id', 'tenant_id', 'created_at', 'revoked_at'])
    .orderBy('created_at')
    .orderBy('id');
  if (filter.tenant !== undefined) query = query.where('tenant_id', '=', filter.tenant);
  if (filter.activeOnly) query = query.where('revoked_at', 'is', null);
  const rows = await query.execute();
  return rows.map((row) => ({
    id: row.id,
    tenant: row.tenant_id,
    createdAt: String(row.created_at),
    revokedAt: row.revoked_at === null ? null : String(row.revoked_at),
  }));
}

/** Why a key reference resolved to no single key. */
export class KeyReferenceError extends Error {}

/**
 * The id of the key `reference` names: a key id (`key_…`), a prefix of one that matches exactly one key
 * (like a short git hash), or the secret key itself (`sk_…`, looked up by its hash).
 */
export async function resolveKeyId(db: Kysely<Database>, reference: string): Promise<string> {
  if (API_KEY_PATTERN.test(reference)) {
    const row = await db
      .selectFrom('api_keys')
      .select('id')
      .where('key_hash', '=', hashApiKey(reference))
      .executeTakeFirst();
    if (!row) throw new KeyReferenceError('no key matches the given secret key');
    return row.id;
  }
  if (!/^key_[0-9A-Za-z]{4,}$/.test(reference)) {
    throw new KeyReferenceError(
      `"${reference}" is neither a key id (key_…, at least 4 characters after key_) nor a key (sk_…)`,
    );
  }
  const rows = await db
    .selectFrom('api_keys')
    .select('id')
    .where('id', 'like', `${reference}%`)
    .limit(2)
    .execute();
  if (rows.length === 0) throw new KeyReferenceError(`no key id starts with "${reference}"`);
  if (rows.length > 1)
    throw new KeyReferenceError(`"${reference}" matches several keys: give more of the id`);
  return (rows[0] as { id: string }).id;
}

/** Formats listings as aligned columns with a header, for a terminal. */
export function formatKeyTable(keys: readonly KeyListing[]): string {
  const rows = [
    ['ID', 'TENANT', 'CREATED', 'STATUS'],
    ...keys.map((k) => [k.id, k.tenant, k.createdAt, k.revokedAt ? `revoked ${k.revokedAt}` : 'active']),
  ];
  const widths = [0, 1, 2].map((column) => Math.max(...rows.map((row) => (row[column] as string).length)));
  return rows
    .map((row) =>
      row.map((cell, column) => (column < 3 ? cell.padEnd(widths[column] as number) : cell)).join('  '),
    )
    .join('\n');
}
