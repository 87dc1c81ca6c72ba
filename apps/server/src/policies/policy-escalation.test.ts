import { randomBytes } from 'node:crypto';
import type {
  Policy,
  PolicyEscalatedEvent,
  Run,
  RunItemResult,
  RunResultList,
  ScoreResponse,
} from '@scenario-scoring/api-types';
import { cidOfBytes } from '@scenario-scoring/engine';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { forEachDatabase } from '../../test/support/test-databases.js';
import { testFeatures } from '../../test/support/test-features.js';
import { testRunWorker, waitForRunEnd } from '../../test/support/test-run-worker.js';
import { startTestServer, type TestServer } from '../../test/support/test-server.js';
import { createTestWebhook } from '../../test/support/test-webhooks.js';
import { insertEvents, newEvent } from '../events/event-outbox.js';
import type { RunWorker } from '../runs/run-worker.js';
import { SecretBox } from '../webhooks/outbound/secret-box.js';

// Hand-computed under the default policy (review_threshold 550, max_band 250); FR has no entry of its own.
// All five inputs present: sd = 0.05·√(350² + 300² + 150² + 100² + 100²) = 25.249, so the band is 64.7.
// μ = 350·0.55 + 300·(1 − u/0.9) + 150·0.55 + 100·0.55 + 100·0.5 = 380 + 300·(1 − u/0.9).
const NEAR_THRESHOLD = {
  jurisdiction: 'FR',
  on_time_ratio: 0.91,
  history_months: 66,
  debt_to_income: 0.27,
  inquiries_12m: 3,
};
const CASES = [
  // u = 0.3903: μ = 549.9, just below the threshold.
  {
    subject: 'just-below',
    context: { ...NEAR_THRESHOLD, utilization: 0.3903 },
    p50: 549.9,
    reasons: ['below_threshold'],
  },
  // u = 0.39: μ = 550.0, at the threshold: not below it.
  { subject: 'at-threshold', context: { ...NEAR_THRESHOLD, utilization: 0.39 }, p50: 550, reasons: [] },
  // u = 0.3897: μ = 550.1, just above.
  { subject: 'just-above', context: { ...NEAR_THRESHOLD, utilization: 0.3897 }, p50: 550.1, reasons: [] },
  // Only history (x = 1): μ = 425 + 150 = 575 ≥ 550, but sd = √(87.5² + 75² + 7.5² + 25² + 25²) = 120.78,
  // so p90 − p10 = 2·1.28155·120.78 = 309.6 > 250.
  {
    subject: 'thin-but-good',
    context: { jurisdiction: 'FR', history_months: 120 },
    p50: 575,
    reasons: ['high_uncertainty'],
  },
  // Nothing but the jurisdiction: μ = 500 and sd = 0.25·504.975 = 126.24, band 323.6: both reasons.
  {
    subject: 'thin-file',
    context: { jurisdiction: 'FR' },
    p50: 500,
    reasons: ['below_threshold', 'high_uncertainty'],
  },
] as const;

const SECRET_BOX = new SecretBox(randomBytes(32));

const bySubject = (events: PolicyEscalatedEvent[]) =>
  [...events].sort((a, b) => a.data.subject.localeCompare(b.data.subject));

forEachDatabase('policy escalation', ({ storage }) => {
  let server: TestServer;
  let worker: RunWorker;
  let key: string;
  beforeAll(async () => {
    worker = testRunWorker(storage());
    worker.start();
    server = await startTestServer({ storage: storage(), workers: [worker] });
    ({ key } = await testFeatures(storage()).keys.create('escalation'));
    // An escalation is written only for a tenant with a webhook that takes it (no worker delivers here).
    await createTestWebhook(storage(), SECRET_BOX, {
      tenantId: 'escalation',
      url: 'http://127.0.0.1:9/hook',
      events: ['policy.escalated'],
    });
  });
  afterAll(async () => {
    await server.close();
    await worker.stop();
  });

  const escalations = async () => {
    const rows = await storage()
      .db.selectFrom('events')
      .select('payload')
      .where('tenant_id', '=', 'escalation')
      .where('type', '=', 'policy.escalated')
      .orderBy('id')
      .execute();
    // Ids made in one millisecond do not sort by creation, so the events are compared by subject.
    return rows.map((row) => JSON.parse(row.payload) as PolicyEscalatedEvent);
  };

  it('when scored synchronously, then exactly the escalated subjects raise policy.escalated with every reason, committed with the log record', async () => {
    const before = (await escalations()).length;
    const answers: ScoreResponse[] = [];
    for (const { subject, context } of CASES) {
      const response = await server.request('/v1/scoring/score', { key, body: { subject, context } });
      answers.push((await response.json()) as ScoreResponse);
    }
    expect(answers.map((a) => a.result.scenarios[1]?.score)).toEqual(CASES.map((c) => c.p50));
    const events = bySubject((await escalations()).slice(before));
    const expected = CASES.flatMap((c, i) => (c.reasons.length === 0 ? [] : [{ c, answer: answers[i] }]));
    expected.sort((a, b) => a.c.subject.localeCompare(b.c.subject));
    expect(events.map((e) => e.data.subject)).toEqual(expected.map(({ c }) => c.subject));
    for (const [i, event] of events.entries()) {
      const { c, answer } = expected[i] as (typeof expected)[number];
      const [p10, p50, p90] = answer?.result.scenarios ?? [];
      expect(event.data).toEqual({
        subject: c.subject,
        jurisdiction: 'FR',
        policy_id: 'default',
        policy_version: '2026-11-01',
        reasons: [...c.reasons],
        scores: { p10: p10?.score, p50: p50?.score, p90: p90?.score },
        // The scoring's own reasons, English as answered by default and as recorded.
        score_reasons: answer?.result.reasons,
        log_cid: answer?.log_cid,
        request_id: answer?.id,
        run_id: null,
      });
    }
  });

  it('when scored in a run, then the same items are escalated, flagged and counted, each event naming the run', async () => {
    const before = (await escalations()).length;
    const items = CASES.map(({ subject, context }) => ({ subject: `run-${subject}`, context }));
    const created = (await (
      await server.request('/v1/scoring/runs', { key, body: { items } })
    ).json()) as Run;
    const run = await waitForRunEnd(server, key, created.id);
    const escalated = CASES.filter((c) => c.reasons.length > 0);
    expect(run.counts).toEqual({ succeeded: CASES.length, failed: 0, escalated: escalated.length });
    const page = (await (
      await server.request(`/v1/scoring/runs/${run.id}/results`, { key })
    ).json()) as RunResultList;
    const results = page.data as RunItemResult[];
    expect(results.map((r) => r.escalated)).toEqual(CASES.map((c) => c.reasons.length > 0));
    const events = bySubject((await escalations()).slice(before));
    expect(events.map((e) => [e.data.subject, e.data.reasons])).toEqual(
      escalated
        .map((c) => [`run-${c.subject}`, [...c.reasons]])
        .sort((a, b) => String(a[0]).localeCompare(String(b[0]))),
    );
    for (const event of events) {
      expect(event.data.run_id).toBe(run.id);
      expect(event.data.request_id).toBeNull();
      expect(event.data.log_cid).toBe(results.find((r) => r.subject === event.data.subject)?.log_cid);
    }
  });

  it('when the event cannot be written, then the log record is not either: both commit in one transaction', async () => {
    const taken = newEvent(
      'escalation',
      'webhook.test',
      { webhook_id: 'wh_x', message: 'taken' },
      new Date(),
    );
    await insertEvents(storage().db, [taken]);
    const now = new Date();
    const bytes = new TextEncoder().encode('{"atomic":true}');
    const cid = cidOfBytes(bytes);
    // An event whose id is taken fails its insert, and so the whole group commit.
    const clash = { ...taken, type: 'policy.escalated' as const, createdAt: now };
    const append = testFeatures(storage()).logs.append({
      tenantId: 'escalation',
      cid,
      bytes,
      requestId: 'req_x',
      createdAt: now,
      events: [clash],
    });
    await expect(append).rejects.toThrow();
    expect(await testFeatures(storage()).logs.get('escalation', cid)).toBeUndefined();
  });

  it('when the tenant has no active webhook taking policy.escalated, then no escalation event is written (it holds the subject, and nobody would receive it)', async () => {
    const tenants = ['escalation-none', 'escalation-other-type', 'escalation-disabled', 'escalation-all'];
    await createTestWebhook(storage(), SECRET_BOX, {
      tenantId: 'escalation-other-type',
      url: 'http://127.0.0.1:9/hook',
      events: ['run.completed'],
    });
    const disabled = await createTestWebhook(storage(), SECRET_BOX, {
      tenantId: 'escalation-disabled',
      url: 'http://127.0.0.1:9/hook',
      events: ['policy.escalated'],
    });
    await storage()
      .db.updateTable('webhooks')
      .set({ status: 'disabled', disabled_reason: 'manual' })
      .where('id', '=', disabled.id)
      .execute();
    await createTestWebhook(storage(), SECRET_BOX, {
      tenantId: 'escalation-all',
      url: 'http://127.0.0.1:9/hook',
    });
    const thin = CASES.find((c) => c.subject === 'thin-file') as (typeof CASES)[number];
    for (const tenant of tenants) {
      const { key: tenantKey } = await testFeatures(storage()).keys.create(tenant);
      const body = { subject: `${tenant}-subject`, context: thin.context };
      expect((await server.request('/v1/scoring/score', { key: tenantKey, body })).status).toBe(200);
    }
    const rows = await storage()
      .db.selectFrom('events')
      .select('tenant_id')
      .where('tenant_id', 'in', tenants)
      .where('type', '=', 'policy.escalated')
      .execute();
    expect(rows.map((row) => row.tenant_id)).toEqual(['escalation-all']);
  });

  describe('when a jurisdiction disables a factor (DE: recent_inquiries)', () => {
    // DE's weights are the default's × 1000/900: 388.89, 333.33, 166.67, 111.11 and 0. With x = 1, 1, 0,
    // 0 (and inquiries ignored): μ = 388.89 + 333.33 = 722.2; sd = 0.05·√(388.89² + 333.33² + 166.67² +
    // 111.11²) = 27.499, so p10 = 722.22 − 35.24 = 687.0 and p90 = 757.5. Under the default: 650 ± 32.4.
    const context = {
      on_time_ratio: 1,
      utilization: 0,
      history_months: 0,
      debt_to_income: 0.6,
      inquiries_12m: 6,
    };

    it('then it scores with the re-shared weights, and its policy says so', async () => {
      const score = async (jurisdiction: string) => {
        const body = { subject: `reshare-${jurisdiction}`, context: { jurisdiction, ...context } };
        const answer = (await (
          await server.request('/v1/scoring/score', { key, body })
        ).json()) as ScoreResponse;
        return answer.result.scenarios.map((s) => s.score);
      };
      expect(await score('DE')).toEqual([687, 722.2, 757.5]);
      expect(await score('FR')).toEqual([617.6, 650, 682.4]);
      const policy = (await (await server.request('/v1/scoring/policies/DE', { key })).json()) as Policy;
      expect(policy.weights.recent_inquiries).toBe(0);
      expect(policy.weights.payment_history).toBeCloseTo(388.889, 3);
    });
  });
});
