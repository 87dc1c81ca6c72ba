import { API_KEY_PATTERN } from './api-key.js';
import type { ApiKeyListing, ApiKeyStore } from './api-key-store.js';

/** Why a key reference resolved to no single key. */
export class KeyReferenceError extends Error {}

/** What a key id prefix must be at least: `key_` and 4 characters, so a typo cannot name every key. */
const KEY_ID_PREFIX = /^key_[0-9A-Za-z]{4,}$/;

/**
 * The id of the key `reference` names (`revoke-key`): a key id (`key_…`), a prefix of one that matches
 * exactly one key (like a short git hash), or the secret key itself (`sk_…`, looked up by its hash).
 */
export async function resolveKeyId(keys: ApiKeyStore, reference: string): Promise<string> {
  if (API_KEY_PATTERN.test(reference)) {
    const id = await keys.idOfKey(reference);
    if (id === undefined) throw new KeyReferenceError('no key matches the given secret key');
    return id;
  }
  if (!KEY_ID_PREFIX.test(reference)) {
    throw new KeyReferenceError(
      `"${reference}" is neither a key id (key_…, at least 4 characters after key_) nor a key (sk_…)`,
    );
  }
  const ids = await keys.idsStartingWith(reference, 2);
  if (ids.length === 0) throw new KeyReferenceError(`no key id starts with "${reference}"`);
  if (ids.length > 1) throw new KeyReferenceError(`"${reference}" matches several keys: give more of the id`);
  return ids[0] as string;
}

/** Formats listings (`list-keys`) as aligned columns with a header, for a terminal. */
export function formatKeyTable(keys: readonly ApiKeyListing[]): string {
  const header = ['ID', 'TENANT', 'SCOPE', 'CREATED', 'STATUS'];
  const rows = [
    header,
    ...keys.map((k) => [
      k.id,
      k.tenant,
      k.scope,
      k.createdAt,
      k.revokedAt ? `revoked ${k.revokedAt}` : 'active',
    ]),
  ];
  const last = header.length - 1;
  const widths = header.map((_, column) => Math.max(...rows.map((row) => (row[column] as string).length)));
  return rows
    .map((row) =>
      row.map((cell, column) => (column < last ? cell.padEnd(widths[column] as number) : cell)).join('  '),
    )
    .join('\n');
}

/** Formats tenants' storage usage (`usage`) as aligned columns: bytes used, the quota, the share used. */
export function formatUsageTable(
  usage: ReadonlyMap<string, number>,
  quotaBytes: number,
  tenant: string | undefined,
): string {
  const tenants = tenant === undefined ? [...usage.keys()].sort() : [tenant];
  const rows = [
    ['TENANT', 'USED_BYTES', 'QUOTA_BYTES', 'USED'],
    ...tenants.map((name) => {
      const used = usage.get(name) ?? 0;
      return [
        name,
        String(used),
        quotaBytes === 0 ? 'none' : String(quotaBytes),
        quotaBytes === 0 ? '-' : `${((100 * used) / quotaBytes).toFixed(1)}%`,
      ];
    }),
  ];
  const widths =
    rows[0]?.map((_, column) => Math.max(...rows.map((row) => (row[column] as string).length))) ?? [];
  return rows
    .map((row) =>
      row
        .map((cell, column) => cell.padEnd(widths[column] as number))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}
