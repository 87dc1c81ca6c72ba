import { randomBytes } from 'node:crypto';
import { type Features, wireFeatures } from '../../src/features.js';
import type { Storage } from '../../src/storage/storage.js';

const wired = new WeakMap<Storage, Features>();

/**
 * The features wired on `storage`, once per storage as the runtime does: the test server, the test workers
 * and the test itself share one log store, one key store and one pair of signals, so a notify in one wakes
 * the others. `closeTestStorage` flushes them before it closes the storage.
 */
export function testFeatures(storage: Storage): Features {
  let features = wired.get(storage);
  if (!features) {
    features = wireFeatures(storage, { secret: randomBytes(32) });
    wired.set(storage, features);
  }
  return features;
}

/** Flushes the features wired on `storage` (if any), then closes it, as the runtime stops. */
export async function closeTestStorage(storage: Storage): Promise<void> {
  await wired.get(storage)?.close();
  await storage.close();
}
