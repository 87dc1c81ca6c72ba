import { existsSync, rmSync } from 'node:fs';
import { mkdtemp, rename, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { waitUntil } from '@scenario-scoring/testkit';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { testRecord } from '../test/support/log-fixtures.js';
import { testFeatures } from '../test/support/test-features.js';
import { testConfig } from '../test/support/test-server.js';
import type { Features } from './features.js';
import { silentLogger } from './request-logging/logger.js';
import { type Runtime, startRuntime } from './runtime.js';
import {
  DataDirInUseError,
  SERVER_LOCK_FILE_NAME,
  ServerLockLostError,
  takeServerLock,
} from './storage/server-lock.js';

/** The record the worker of the stop test writes as it finishes. */
const FINISHED = testRecord('default', 0);

import { openStorage } from './storage/storage.js';
import type { BackgroundWorker } from './workers/background-worker.js';

/** A worker with one job in flight that the test finishes; the job writes to the storage when released. */
class InFlightWorker implements BackgroundWorker {
  readonly name = 'in-flight-test';
  running = false;
  stopCalled = false;
  release: () => void = () => {};
  #job: Promise<void> = Promise.resolve();

  constructor(private readonly features: Features) {}

  start(): void {
    this.running = true;
    this.#job = new Promise<void>((resolve) => {
      this.release = resolve;
    }).then(() =>
      this.features.logs.append({
        tenantId: 'default',
        cid: FINISHED.cid,
        bytes: FINISHED.bytes,
        requestId: 'req_worker',
        createdAt: new Date(),
      }),
    );
  }

  async stop(): Promise<void> {
    this.running = false;
    this.stopCalled = true;
    await this.#job;
  }
}

let dataDir: string;
beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'ss-runtime-'));
});
afterAll(() => rm(dataDir, { recursive: true, force: true }));

it('stop() answers /readyz 503 draining first, closes the listener, waits for the work of a worker in flight, then closes the storage', async () => {
  let worker: InFlightWorker | undefined;
  const runtime = await startRuntime({
    config: testConfig({ dataDir, shutdown: { drainDelayMs: 1000, graceMs: 5000 } }),
    logger: silentLogger,
    announce: () => {},
    workers: ({ features }) => {
      worker = new InFlightWorker(features);
      return [worker];
    },
  });
  if (worker === undefined) throw new Error('the runtime built no worker');
  expect(runtime.lifecycle.phase).toBe('running');
  expect(await (await fetch(`${runtime.url}/readyz`)).json()).toMatchObject({ status: 'ready' });

  let stopped = false;
  const stopping = runtime.stop().then(() => {
    stopped = true;
  });
  const draining = await fetch(`${runtime.url}/readyz`);
  expect(draining.status).toBe(503);
  expect(await draining.json()).toMatchObject({ status: 'draining' });

  await waitUntil(() => !runtime.server.listening, 10_000, 'the listener to close');
  await waitUntil(() => worker?.stopCalled === true, 10_000, 'the worker to be told to stop');
  await expect(fetch(`${runtime.url}/healthz`)).rejects.toThrow();
  expect(stopped).toBe(false);

  worker.release();
  await stopping;
  // The worker's write went through before the storage closed, and was flushed.
  const reopened = await openStorage({ dataDir });
  try {
    expect(await testFeatures(reopened).logs.get('default', FINISHED.cid)).toBeDefined();
  } finally {
    await reopened.close();
  }
});

it('serves metrics on their own listener when METRICS_PORT is set', async () => {
  const runtime = await startRuntime({
    config: testConfig({ dataDir, metrics: { port: 0, host: '127.0.0.1', token: undefined } }),
    logger: silentLogger,
    announce: () => {},
    workers: () => [],
  });
  try {
    expect(runtime.metricsUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/metrics$/);
    const text = await (await fetch(runtime.metricsUrl ?? '')).text();
    expect(text).toContain('scenario_scoring_outbox_depth{stage="undispatched_events"} 0');
    expect((await fetch(`${runtime.url}/metrics`)).status).toBe(404);
  } finally {
    await runtime.stop();
  }
});

it('says after the first key how to allow a local webhook receiver when loopback is refused (the production default), and not when it is allowed', async () => {
  const lines = async (allowedCidrs: string[]) => {
    const announced: string[] = [];
    const fresh = await mkdtemp(join(tmpdir(), 'ss-runtime-hint-'));
    const config = testConfig({ dataDir: fresh });
    const runtime = await startRuntime({
      config: { ...config, webhooks: { ...config.webhooks, allowedCidrs } },
      logger: silentLogger,
      announce: (line) => announced.push(line),
      workers: () => [],
    });
    await runtime.stop();
    await rm(fresh, { recursive: true, force: true });
    return announced;
  };
  const refused = (await lines([])).find((line) => line.startsWith('Created an API key'));
  expect(refused).toMatch(
    /^Created an API key for tenant "default" \(shown once\): sk_\w{40} \(webhooks to a receiver on this machine are refused: to allow them, start with WEBHOOK_ALLOWED_CIDRS=127\.0\.0\.1\/32,::1\/128\)$/,
  );
  const allowed = (await lines(['127.0.0.1/32'])).find((line) => line.startsWith('Created an API key'));
  expect(allowed).toMatch(/^Created an API key for tenant "default" \(shown once\): sk_\w{40}$/);
});

it("refuses a second runtime on the running one's SQLite DATA_DIR, before it opens the storage; the first serves on, and once stopped a runtime starts there again", async () => {
  const start = () =>
    startRuntime({
      config: testConfig({ dataDir }),
      logger: silentLogger,
      announce: () => {},
      workers: () => [],
    });
  const first = await start();
  try {
    await expect(start()).rejects.toBeInstanceOf(DataDirInUseError);
    await expect(start()).rejects.toThrow(
      new RegExp(
        `^DATA_DIR ${dataDir} is in use by another scenario-scoring server \\(pid ${process.pid}, started `,
      ),
    );
    expect(await (await fetch(`${first.url}/readyz`)).json()).toMatchObject({ status: 'ready' });
  } finally {
    await first.stop();
  }
  const second = await start();
  expect(await (await fetch(`${second.url}/readyz`)).json()).toMatchObject({ status: 'ready' });
  await second.stop();
});

/**
 * Runs `test` with a runtime on a fresh DATA_DIR whose lock is checked every 20 ms, and a lock another
 * "server" holds on a file of its own (`other`, in `elsewhere`), to be put in the runtime's place.
 */
async function withWatchedLock(
  onLockLost: ((error: Error) => void) | undefined,
  test: (context: { runtime: Runtime; dataDir: string; elsewhere: string }) => Promise<void>,
): Promise<void> {
  const dataDir = await mkdtemp(join(tmpdir(), 'ss-runtime-lock-'));
  const elsewhere = await mkdtemp(join(tmpdir(), 'ss-runtime-other-'));
  const runtime = await startRuntime({
    config: testConfig({ dataDir }),
    logger: silentLogger,
    announce: () => {},
    workers: () => [],
    lockCheckMs: 20,
    ...(onLockLost && { onLockLost }),
  });
  const other = takeServerLock(elsewhere);
  try {
    await test({ runtime, dataDir, elsewhere });
  } finally {
    other.release();
    await runtime.stop();
    await rm(dataDir, { recursive: true, force: true });
    await rm(elsewhere, { recursive: true, force: true });
  }
}

it('takes its lock again when server.lock is removed, and stops when another server holds the file put in its place', async () => {
  const lost: Error[] = [];
  await withWatchedLock(
    (error) => lost.push(error),
    async ({ runtime, dataDir, elsewhere }) => {
      // Removed: taken again on a new file within a check (the check makes the file and locks it in one
      // step of this event loop), so a second runtime is refused again.
      rmSync(join(dataDir, SERVER_LOCK_FILE_NAME));
      await waitUntil(() => existsSync(join(dataDir, SERVER_LOCK_FILE_NAME)));
      expect(() => takeServerLock(dataDir)).toThrow(DataDirInUseError);
      expect(lost).toEqual([]);
      // Replaced by a file another server holds: this one is told it lost the lock.
      await rename(join(elsewhere, SERVER_LOCK_FILE_NAME), join(dataDir, SERVER_LOCK_FILE_NAME));
      await waitUntil(() => lost.length > 0);
      expect(lost[0]).toBeInstanceOf(ServerLockLostError);
      // Already stopping when told: its listener goes, and no drain delay is waited.
      expect(runtime.lifecycle.phase).not.toBe('running');
    },
  );
});

it('stops by itself, without onLockLost, once it lost its lock', async () => {
  await withWatchedLock(undefined, async ({ runtime, dataDir, elsewhere }) => {
    await rename(join(elsewhere, SERVER_LOCK_FILE_NAME), join(dataDir, SERVER_LOCK_FILE_NAME));
    await waitUntil(() => runtime.lifecycle.phase !== 'running');
    await waitUntil(async () => {
      try {
        await fetch(`${runtime.url}/readyz`);
        return false;
      } catch {
        return true;
      }
    });
  });
});
