import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openStorage, type Storage } from '../src/storage/storage.js';
import { insertLogFault } from '../src/verifiable-log/verifiable-log-store.js';
import { databaseEnv, requireBuiltServer, runBuiltCli } from './support/built-server.js';
import { createTestDatabase, DATABASE_KINDS, type TestDatabase } from './support/test-databases.js';

beforeAll(() => requireBuiltServer());

for (const kind of DATABASE_KINDS) {
  describe(`the log fault commands of the built CLI (${kind})`, () => {
    let database: TestDatabase;
    let storage: Storage;
    beforeAll(async () => {
      database = await createTestDatabase(kind);
      storage = await openStorage(database.options);
    });
    afterAll(async () => {
      await storage.close();
      await database.dispose();
    });

    it('lists open faults (exit 1 while there is one), clears one whose log matches, and refuses one whose log does not', async () => {
      const env = databaseEnv(database);
      expect(await runBuiltCli(['log-faults'], env)).toMatchObject({ code: 0 });
      const fault = { treeSize: 300, firstIndex: 270, endIndex: 290, reason: 'the root differs' };
      await insertLogFault(storage.db, {
        tenantId: 'acme',
        detectedAt: '2026-11-26T21:00:00.000Z',
        ...fault,
      });
      await insertLogFault(storage.db, {
        tenantId: 'beta',
        detectedAt: '2026-11-26T21:00:01.000Z',
        ...fault,
      });
      // Tenant beta has a leaf (its level-0 tile) but no signed checkpoint: its log does not match,
      // whatever the key.
      await storage.db
        .insertInto('log_tiles')
        .values({ tenant_id: 'beta', level: 0, tile_index: 0, width: 1, hashes: Buffer.alloc(32, 7) })
        .execute();

      const listed = await runBuiltCli(['log-faults'], env);
      expect(listed.code).toBe(1);
      const lines = listed.stdout.trim().split('\n');
      expect(lines[0]).toMatch(/^TENANT\s+DETECTED\s+TREE_SIZE\s+LEAVES\s+REASON$/);
      expect(lines.slice(1).map((line) => line.split(/\s+/).slice(0, 4))).toEqual([
        ['acme', '2026-11-26T21:00:00.000Z', '300', '270..289'],
        ['beta', '2026-11-26T21:00:01.000Z', '300', '270..289'],
      ]);

      expect(await runBuiltCli(['clear-log-fault', '--tenant', 'acme'], env)).toMatchObject({
        code: 0,
        stdout: 'cleared 1 log fault(s) of tenant acme: its log is signed again\n',
      });
      const refused = await runBuiltCli(['clear-log-fault', '--tenant', 'beta'], env);
      expect(refused.code).toBe(1);
      expect(refused.stderr).toMatch(
        /^error: not cleared: 1 leaves are stored but no signed checkpoint verifies/,
      );
      expect((await runBuiltCli(['log-faults', '--tenant', 'acme'], env)).code).toBe(0);
      expect((await runBuiltCli(['log-faults'], env)).stdout).toContain('beta');
      expect(await runBuiltCli(['clear-log-fault'], env)).toMatchObject({ code: 2 });
      // A mistyped tenant is not "no open fault".
      const typo = await runBuiltCli(['clear-log-fault', '--tenant', 'acmee'], env);
      expect(typo.code).toBe(1);
      expect(typo.stderr).toMatch(/^error: no tenant named acmee/);
    }, 60_000);
  });
}
