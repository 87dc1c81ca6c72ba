import { chmodSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { closeTestStorage, testFeatures } from '../../test/support/test-features.js';
import { loadSecretsKey } from '../webhooks/outbound/secret-box.js';
import { openStorage } from './storage.js';

const roots: string[] = [];
afterEach(() => {
  for (const root of roots.splice(0)) rmSync(root, { recursive: true, force: true });
});
const modeOf = (path: string) => statSync(path).mode & 0o777;

function looseDataDir(): string {
  const root = mkdtempSync(join(tmpdir(), 'ss-modes-'));
  roots.push(root);
  const dataDir = join(root, 'data');
  mkdirSync(dataDir, { mode: 0o755 });
  chmodSync(dataDir, 0o755);
  return dataDir;
}

// DATA_DIR holds subjects, contexts and key hashes: no other user of the host may read it, whatever the umask.
it('creates DATA_DIR 0700 and every SQLite file in it 0600, whatever the umask', async () => {
  const root = mkdtempSync(join(tmpdir(), 'ss-modes-'));
  roots.push(root);
  const dataDir = join(root, 'fresh');
  const previous = process.umask(0o022);
  try {
    const storage = await openStorage({ dataDir });
    await testFeatures(storage).keys.create('modes');
    expect(modeOf(dataDir)).toBe(0o700);
    const files = readdirSync(dataDir);
    expect(files).toEqual(expect.arrayContaining(['scenario-scoring.sqlite', 'scenario-scoring.sqlite-wal']));
    for (const file of files) expect([file, modeOf(join(dataDir, file))]).toEqual([file, 0o600]);
    await closeTestStorage(storage);
  } finally {
    process.umask(previous);
  }
});

it('tightens a looser DATA_DIR and the files in it at start', async () => {
  const dataDir = looseDataDir();
  writeFileSync(join(dataDir, 'scenario-scoring.sqlite'), '');
  chmodSync(join(dataDir, 'scenario-scoring.sqlite'), 0o644);
  writeFileSync(join(dataDir, 'secrets.key'), `${Buffer.alloc(32, 7).toString('base64')}\n`);
  chmodSync(join(dataDir, 'secrets.key'), 0o644);
  await loadSecretsKey({ secretsKey: undefined, dataDir });
  expect(modeOf(dataDir)).toBe(0o700);
  expect(modeOf(join(dataDir, 'secrets.key'))).toBe(0o600);
  chmodSync(dataDir, 0o755);
  const storage = await openStorage({ dataDir });
  await storage.close();
  expect(modeOf(dataDir)).toBe(0o700);
  for (const file of readdirSync(dataDir)) expect([file, modeOf(join(dataDir, file))]).toEqual([file, 0o600]);
});
