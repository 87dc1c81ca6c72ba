import { describe, expect, expectTypeOf, it } from 'vitest';
import {
  API_KEY,
  BASE_URL,
  jsonResponse,
  problemResponse,
  recordingSleep,
  scriptedFetch,
} from '../test/scripted-fetch.js';
import type { Problem, Run } from './api-types.js';
import { createClient } from './client-factory.js';
import { fetchRunResults, submitRun, waitForRun } from './run-polling.js';

const RUN_ID = 'run_01JZ4VB2C4D6E8F0G2H4J6K8M0';
const run = (status: Run['status'], extra: Partial<Run> = {}): Run => ({
  id: RUN_ID,
  status,
  item_count: 2,
  counts: { succeeded: status === 'queued' ? 0 : 2, failed: 0, escalated: 1 },
  progress: {
    attempted: status === 'queued' ? 0 : 2,
    failed: 0,
    items_per_second: status === 'queued' ? null : 28.6,
  },
  created_at: '2026-11-22T10:00:00.000Z',
  started_at: status === 'queued' ? null : '2026-11-22T10:00:00.050Z',
  completed_at: status === 'completed' || status === 'failed' ? '2026-11-22T10:00:00.120Z' : null,
  deadline_at: null,
  error: null,
  ...extra,
});
const ITEMS = [{ subject: 'a', context: { jurisdiction: 'DE' } }];
// No middleware retries: these tests are about what the run helpers themselves do.
const clientWith = (fetch: (request: Request) => Promise<Response>) =>
  createClient({ baseUrl: BASE_URL, apiKey: API_KEY, fetch, retries: false });

describe('submitRun', () => {
  it('posts the items with the Idempotency-Key, and answers the queued run as data', async () => {
    const { fetch, sent } = scriptedFetch(jsonResponse(run('queued'), 202));
    const result = await submitRun(clientWith(fetch), { items: ITEMS }, { idempotencyKey: 'nightly-1' });
    expect(result.data).toEqual(run('queued'));
    expect(sent[0]?.method).toBe('POST');
    expect(sent[0]?.url).toBe(`${BASE_URL}/v1/scoring/runs`);
    expect(sent[0]?.headers.get('Idempotency-Key')).toBe('nightly-1');
    expect(JSON.parse(sent[0]?.body ?? '')).toEqual({ items: ITEMS });
    expectTypeOf(result.data).toEqualTypeOf<Run | undefined>();
  });

  it('answers a refusal as error, the problem the server sent', async () => {
    const { fetch } = scriptedFetch(problemResponse(400, 'validation_failed'));
    const result = await submitRun(clientWith(fetch), { items: ITEMS });
    expect(result.error?.code).toBe('validation_failed');
    expectTypeOf(result.error).toEqualTypeOf<Problem | undefined>();
  });
});

describe('waitForRun', () => {
  it('polls until the run has ended, waiting longer each time', async () => {
    const { fetch, sent } = scriptedFetch(
      jsonResponse(run('queued')),
      jsonResponse(run('running')),
      jsonResponse(run('running')),
      jsonResponse(run('completed')),
    );
    const { sleep, waits } = recordingSleep();
    const result = await waitForRun(clientWith(fetch), RUN_ID, { sleep, random: () => 0 });
    expect(result.data?.status).toBe('completed');
    expect(sent.map((s) => s.url)).toEqual(Array(4).fill(`${BASE_URL}/v1/scoring/runs/${RUN_ID}`));
    // With no jitter the waits start at initialDelayMs (250) and double.
    expect(waits).toEqual([250, 500, 1000]);
  });

  it('tells onProgress of the run at every poll, the ended run last', async () => {
    const halfway = run('running', {
      item_count: 4,
      progress: { attempted: 2, failed: 1, items_per_second: 12.5 },
    });
    const { fetch } = scriptedFetch(
      jsonResponse(run('queued')),
      jsonResponse(halfway),
      jsonResponse(run('completed')),
    );
    const { sleep } = recordingSleep();
    const seen: Run[] = [];
    const result = await waitForRun(clientWith(fetch), RUN_ID, {
      sleep,
      random: () => 0,
      onProgress: (polled) => seen.push(polled),
    });
    expect(result.data?.status).toBe('completed');
    expect(seen.map((polled) => polled.status)).toEqual(['queued', 'running', 'completed']);
    expect(seen[1]?.progress).toEqual({ attempted: 2, failed: 1, items_per_second: 12.5 });
  });

  it('ends the wait with the error onProgress throws', async () => {
    const { fetch, sent } = scriptedFetch(jsonResponse(run('running')), jsonResponse(run('completed')));
    const { sleep } = recordingSleep();
    const stop = new Error('progress bar closed');
    await expect(
      waitForRun(clientWith(fetch), RUN_ID, {
        sleep,
        onProgress: () => {
          throw stop;
        },
      }),
    ).rejects.toBe(stop);
    expect(sent).toHaveLength(1);
  });

  it('answers a failed run as data: the run and its error', async () => {
    const error = {
      type: '/docs#section/errors/run_deadline_exceeded',
      title: 'Run deadline exceeded',
      status: 504,
      detail: 'late',
      code: 'run_deadline_exceeded',
    } as const;
    const { fetch } = scriptedFetch(jsonResponse(run('failed', { error })));
    const result = await waitForRun(clientWith(fetch), RUN_ID);
    expect(result.data?.error?.code).toBe('run_deadline_exceeded');
  });

  it('honours Retry-After when rate limited, then keeps polling', async () => {
    const { fetch } = scriptedFetch(
      problemResponse(429, 'rate_limited', { 'Retry-After': '7' }),
      jsonResponse(run('completed')),
    );
    const { sleep, waits } = recordingSleep();
    const result = await waitForRun(clientWith(fetch), RUN_ID, { sleep });
    expect(waits).toEqual([7000]);
    expect(result.data?.status).toBe('completed');
  });

  it('answers an unknown run (404) as error at once', async () => {
    const { fetch, sent } = scriptedFetch(problemResponse(404, 'not_found'));
    const result = await waitForRun(clientWith(fetch), RUN_ID);
    expect(result.error?.code).toBe('not_found');
    expect(sent).toHaveLength(1);
  });

  it('stops when its signal aborts, rejecting with the reason', async () => {
    const controller = new AbortController();
    const { fetch } = scriptedFetch(jsonResponse(run('running')), jsonResponse(run('running')));
    const sleep = async () => controller.abort(new Error('gave up'));
    await expect(waitForRun(clientWith(fetch), RUN_ID, { signal: controller.signal, sleep })).rejects.toThrow(
      'gave up',
    );
  });
});

describe('fetchRunResults', () => {
  it('follows next_cursor and answers every item in order', async () => {
    const item = (index: number) => ({
      index,
      subject: `s-${index}`,
      status: 'error' as const,
      error: {
        type: '/docs#section/errors/internal_error',
        title: 'Internal error',
        status: 500,
        detail: 'x',
        code: 'internal_error' as const,
      },
    });
    const { fetch, sent } = scriptedFetch(
      jsonResponse({ data: [item(0), item(1)], next_cursor: 'aToxMA' }),
      jsonResponse({ data: [item(2)], next_cursor: null }),
    );
    const result = await fetchRunResults(clientWith(fetch), RUN_ID, { limit: 2 });
    expect(result.data?.map((r) => r.index)).toEqual([0, 1, 2]);
    expect(new URL(sent[1]?.url ?? '').searchParams.get('cursor')).toBe('aToxMA');
    expect(new URL(sent[1]?.url ?? '').searchParams.get('limit')).toBe('2');
  });
});
