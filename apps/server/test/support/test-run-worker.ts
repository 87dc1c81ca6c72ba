import type { Run } from '@scenario-scoring/api-types';
import { waitUntil } from '@scenario-scoring/testkit';
import { type Clock, systemClock } from '../../src/common/clock.js';
import { silentLogger } from '../../src/request-logging/logger.js';
import type { RunConfig } from '../../src/runs/run-config.js';
import { createRunStore, type RunStore } from '../../src/runs/run-store.js';
import { RunWorker, type RunWorkerOptions } from '../../src/runs/run-worker.js';
import type { Storage } from '../../src/storage/storage.js';
import { testFeatures } from './test-features.js';
import type { TestServer } from './test-server.js';
import { testConfig } from './test-server.js';

/** A run worker for tests: the test configuration, no waiting between storage retries. */
export function testRunWorker(
  storage: Storage,
  options: Partial<Omit<RunWorkerOptions, 'config'>> & { config?: Partial<RunConfig>; clock?: Clock } = {},
): RunWorker {
  const { config, ...rest } = options;
  return new RunWorker({
    store: createRunStore(storage, { subjectKey: testFeatures(storage).subjectKey }),
    clock: systemClock,
    logger: silentLogger,
    runQueue: testFeatures(storage).runQueue,
    outbox: testFeatures(storage).outbox,
    sleep: async () => {},
    ...rest,
    config: { ...testConfig().runs, ...config },
  });
}

/**
 * A RunStore whose batch commits throw `failures` times (all of them by default) before passing through: the
 * error `fault` makes (by default a plain one, not a busy database's).
 */
export function failingCommits(
  store: RunStore,
  failures = Number.POSITIVE_INFINITY,
  fault: () => Error = () => new Error('injected fault: the disk is gone'),
) {
  const state = { attempts: 0 };
  const wrapped: RunStore = {
    ...store,
    async commitBatch(batch) {
      state.attempts += 1;
      if (state.attempts <= failures) throw fault();
      return store.commitBatch(batch);
    },
  };
  return { store: wrapped, state };
}

/**
 * A RunStore whose `held`-th batch commit waits until `release()` is called, as if its process had frozen
 * (or were being stopped) in the middle of a run; `state.commits` counts the commits begun.
 */
export function heldCommit(store: RunStore, held: number) {
  const state = { commits: 0 };
  let release: () => void = () => {};
  const gate = new Promise<void>((resolve) => {
    release = resolve;
  });
  const wrapped: RunStore = {
    ...store,
    async commitBatch(batch) {
      state.commits += 1;
      if (state.commits === held) await gate;
      return store.commitBatch(batch);
    },
  };
  return { store: wrapped, state, release: () => release() };
}

/** Polls `GET /v1/scoring/runs/{id}` until the run has ended, or throws after `timeoutMs`. */
export function waitForRunEnd(
  server: TestServer,
  key: string,
  runId: string,
  timeoutMs = 15_000,
): Promise<Run> {
  return waitUntil(
    async () => {
      const run = (await (await server.request(`/v1/scoring/runs/${runId}`, { key })).json()) as Run;
      return (run.status === 'completed' || run.status === 'failed') && run;
    },
    timeoutMs,
    `run ${runId} to end`,
  );
}
