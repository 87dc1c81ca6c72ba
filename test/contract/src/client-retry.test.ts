import type { ScoringClient } from '@scenario-scoring/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectProblem, getPolicy } from './harness/contract-calls.js';
import { clientOf } from './harness/contract-client.js';
import { startTarget, type Target } from './harness/targets.js';

let target: Target;
beforeAll(async () => {
  // One request a second: the second request in a row is over the limit.
  target = await startTarget({ rateLimitPerSecond: 1 });
});
afterAll(() => target?.stop());

describe('the client on 429 rate_limited', () => {
  it('waits the Retry-After, retries, and returns the typed problem when the retries run out', async () => {
    const sent: Request[] = [];
    const waits: number[] = [];
    const client: ScoringClient = clientOf(target, {
      onSend: (request) => sent.push(request),
      retries: {
        maxRetries: 1,
        sleep: async (ms) => {
          waits.push(ms);
        },
      },
    });
    // Uses the only request of this second (on the server; the mock has no limit).
    await getPolicy(client, 'DE', { status: 200, example: 'OwnEntry' });
    sent.length = 0;

    const { error, response } = await getPolicy(client, 'DE', { status: 429, example: 'RateLimited' });
    expectProblem(target, error, { code: 'rate_limited', detail: 'per second' });
    expect(response.headers.get('Retry-After')).toBe('1');
    expect(waits).toEqual([1000]);
    expect(sent).toHaveLength(2);
    expect(sent[1]?.headers.get('X-Request-Id')).toBe(sent[0]?.headers.get('X-Request-Id'));
  });
});
