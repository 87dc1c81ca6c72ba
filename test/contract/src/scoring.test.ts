import { type ScoreRequest, type ScoringClient, verifyScoreInclusion } from '@scenario-scoring/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getLog, postScore, SCORE_OPERATION } from './harness/contract-calls.js';
import { clientOf } from './harness/contract-client.js';
import { requestExample } from './harness/contract-validator.js';
import {
  expectedScoring,
  expectServedRecord,
  LOG_CID_PATTERN,
  REQUEST_ID_PATTERN,
} from './harness/expected-scoring.js';
import { startTarget, type Target } from './harness/targets.js';

const FULL_FILE = requestExample(SCORE_OPERATION, 'FullFile') as ScoreRequest;
const THIN_FILE = requestExample(SCORE_OPERATION, 'ThinFile') as ScoreRequest;
const INPUTS = ['on_time_ratio', 'utilization', 'history_months', 'debt_to_income', 'inquiries_12m'] as const;

let target: Target;
let client: ScoringClient;
beforeAll(async () => {
  target = await startTarget();
  client = clientOf(target);
});
afterAll(() => target?.stop());

/**
 * Scores `request`; then, where the target computes (`exact`), expects the golden answer and the record its
 * `log_cid` names (on the server, scored within the request's time: the mock serves the example's time).
 */
async function expectScoredAsGolden(request: ScoreRequest, example: string, exact: boolean) {
  const from = new Date().toISOString();
  const { data } = await postScore(client, { json: request }, { status: 200, example });
  const to = new Date().toISOString();
  if (data === undefined) throw new Error('no scoring');
  const { id, log_cid, ...rest } = data;
  expect(id).toMatch(REQUEST_ID_PATTERN);
  expect(log_cid).toMatch(LOG_CID_PATTERN);
  if (!exact) return;
  expect(rest).toEqual(expectedScoring(request).response);
  const log = await getLog(client, log_cid, { status: 200, example });
  const bytes = new Uint8Array(log.data ?? new ArrayBuffer(0));
  const window = target.kind === 'server' ? { from, to } : undefined;
  await expectServedRecord(bytes, log_cid, request, { kind: 'score', request_id: id }, window);
}

describe('scoring the contract examples', () => {
  it.each([
    ['FullFile', FULL_FILE],
    ['ThinFile', THIN_FILE],
  ])(
    'scores the %s example as the model page predicts, and serves the log record its log_cid names',
    async (name, request) => {
      await expectScoredAsGolden(request, name, true);
    },
  );

  it('logs the same request scored twice as two records: two CIDs, each of its own request', async () => {
    const first = await postScore(client, { json: FULL_FILE }, { status: 200, example: 'FullFile' });
    const second = await postScore(client, { json: FULL_FILE }, { status: 200, example: 'FullFile' });
    // The mock answers every scoring with the one example; only the server logs each scoring.
    if (target.kind !== 'server') return;
    expect(second.data?.log_cid).not.toBe(first.data?.log_cid);
    for (const { data } of [first, second]) {
      const log = await getLog(client, data?.log_cid ?? '', { status: 200, example: 'FullFile' });
      const bytes = new Uint8Array(log.data ?? new ArrayBuffer(0));
      await expectServedRecord(bytes, data?.log_cid ?? '', FULL_FILE, {
        kind: 'score',
        request_id: data?.id ?? '',
      });
    }
  });

  it('widens the band of a thin file beyond that of a full one', async () => {
    const band = async (request: ScoreRequest, example: string) => {
      const { data } = await postScore(client, { json: request }, { status: 200, example });
      const [p10, p50, p90] = data?.result.scenarios.map((s) => s.score) ?? [];
      expect(p10).toBeLessThanOrEqual(p50 as number);
      expect(p50).toBeLessThanOrEqual(p90 as number);
      return (p90 as number) - (p10 as number);
    };
    expect(await band(THIN_FILE, 'ThinFile')).toBeGreaterThan(await band(FULL_FILE, 'FullFile'));
  });
});

// The mock answers every valid scoring with a documented example; only the server computes, so only its
// answers are compared with the golden scorings (harness/scoring-golden.ts).
describe('every optional input may be absent or present', () => {
  it.each(INPUTS)('scores the full file without %s', async (input) => {
    const context = { ...FULL_FILE.context };
    delete context[input];
    await expectScoredAsGolden({ subject: 'without-input', context }, 'FullFile', target.kind === 'server');
  });

  it.each(INPUTS)('scores a file with only %s', async (input) => {
    const context = { jurisdiction: 'DE', [input]: FULL_FILE.context[input] };
    await expectScoredAsGolden({ subject: 'only-input', context }, 'FullFile', target.kind === 'server');
  });
});

describe('values at the edge of their range are accepted', () => {
  it.each([
    { on_time_ratio: 0 },
    { on_time_ratio: 1 },
    { utilization: 0 },
    { utilization: 10 },
    { history_months: 0 },
    { history_months: 1200 },
    { debt_to_income: 0 },
    { debt_to_income: 10 },
    { inquiries_12m: 0 },
    { inquiries_12m: 100 },
    { history_months: 84.0 },
  ])('scores %o', async (inputs) => {
    const request = { subject: 'edge', context: { jurisdiction: 'DE', ...inputs } };
    await expectScoredAsGolden(request, 'FullFile', target.kind === 'server');
  });

  it.each([
    ['a one-character subject', 'a'],
    ['a 256-character subject', 's'.repeat(256)],
    ['a subject beyond ASCII', 'zoë-ünïcødé-申请人-🧾'],
  ])('scores %s', async (_name, subject) => {
    await expectScoredAsGolden(
      { subject, context: { jurisdiction: 'FR' } },
      'FullFile',
      target.kind === 'server',
    );
  });

  it.each(['US', 'US-NY', 'US-CA', 'GB', 'DE', 'FR-75C', 'CN-BJ'])(
    'scores jurisdiction %s under its effective policy',
    async (jurisdiction) => {
      const request = { subject: 'policy', context: { jurisdiction, utilization: 0.5 } };
      await expectScoredAsGolden(request, 'FullFile', target.kind === 'server');
    },
  );

  it('scores a body sent as application/json; charset=utf-8', async () => {
    const { data } = await postScore(
      client,
      { json: FULL_FILE },
      { status: 200, example: 'FullFile' },
      { 'Content-Type': 'application/json; charset=utf-8' },
    );
    expect(data).toMatchObject(expectedScoring(FULL_FILE).response);
  });

  it('scores a body of almost 1 MiB (padded with JSON whitespace)', async () => {
    const json = JSON.stringify(FULL_FILE);
    const raw = `${json.slice(0, -1)}${' '.repeat(1_000_000 - json.length)}}`;
    const { data } = await postScore(client, { raw }, { status: 200, example: 'FullFile' });
    expect(data).toMatchObject(expectedScoring(FULL_FILE).response);
  });
});

// The reasons are part of the golden results above; these literals say, for a reader, what the page predicts.
describe('the reasons the score was not higher (scorecard-2)', () => {
  it('gives the FullFile example its four reasons, by points below maximum, each naming its lever', async () => {
    const { data } = await postScore(client, { json: FULL_FILE }, { status: 200, example: 'FullFile' });
    expect(data?.model_version).toBe('scorecard-2');
    expect(data?.policy_id).toBe('DE');
    expect(data?.result.reasons).toEqual([
      {
        code: 'UT1',
        factor: 'utilization',
        rank: 1,
        points_below_max: 129.6,
        statement: 'Too much of the available credit is in use',
        lever: 'utilization',
      },
      {
        code: 'PH1',
        factor: 'payment_history',
        rank: 2,
        points_below_max: 77.8,
        statement: 'Too few payments were made on time',
        lever: 'payment_history',
      },
      {
        code: 'DI1',
        factor: 'debt_to_income',
        rank: 3,
        points_below_max: 51.9,
        statement: 'Debt is too high relative to income',
        lever: 'debt_to_income',
      },
      {
        code: 'HL1',
        factor: 'history_length',
        rank: 4,
        points_below_max: 50,
        statement: 'The credit history is too short',
      },
    ]);
  });

  it('gives the thin file the missing-input codes, recent inquiries fifth', async () => {
    const { data } = await postScore(client, { json: THIN_FILE }, { status: 200, example: 'ThinFile' });
    expect(data?.result.reasons?.map((r) => [r.code, r.rank, r.points_below_max])).toEqual([
      ['PH0', 1, 200],
      ['UT0', 2, 125],
      ['HL0', 3, 75],
      ['DI0', 4, 50],
      ['RI0', 5, 50],
    ]);
  });

  it.each([
    [
      'a float tie at 0 ranked by name',
      { subject: 'tie', context: { jurisdiction: 'FR', on_time_ratio: 0.9 } },
    ],
    [
      'an attribution of exactly 15',
      { subject: 'fifteen', context: { jurisdiction: 'FR', history_months: 72 } },
    ],
    [
      'inquiries as the fifth reason',
      {
        subject: 'inquiries',
        context: {
          jurisdiction: 'FR',
          on_time_ratio: 0.9,
          utilization: 0.5,
          history_months: 60,
          debt_to_income: 0.3,
          inquiries_12m: 1,
        },
      },
    ],
  ])('scores %s as the page predicts', async (_, request) => {
    await expectScoredAsGolden(request, 'FullFile', target.kind === 'server');
  });

  it('writes the statements in German when asked, and in English for a language the server lacks', async () => {
    const german = await postScore(
      client,
      { json: FULL_FILE },
      { status: 200, example: 'FullFile' },
      { 'Accept-Language': 'de-DE' },
    );
    const other = await postScore(
      client,
      { json: FULL_FILE },
      { status: 200, example: 'FullFile' },
      { 'Accept-Language': 'fr' },
    );
    expect(other.data?.result.reasons?.[0]?.statement).toBe('Too much of the available credit is in use');
    // The mock serves the English example whatever the language; only the server translates.
    if (target.kind !== 'server') return;
    expect(german.response.headers.get('content-language')).toBe('de');
    expect(german.data?.result.reasons?.map((r) => r.statement)).toEqual([
      'Ein zu großer Teil des verfügbaren Kreditrahmens wird genutzt',
      'Zu wenige Zahlungen wurden pünktlich geleistet',
      'Die Schulden sind im Verhältnis zum Einkommen zu hoch',
      'Die Kredithistorie ist zu kurz',
    ]);
    expect(other.response.headers.get('content-language')).toBe('en');
  });
});

describe('the proof in the answer (Prefer: log-inclusion)', () => {
  it("answers, on the server, the record's signed checkpoint and inclusion proof with Preference-Applied, which the client verifies", async () => {
    const { data, response } = await postScore(
      client,
      { json: FULL_FILE },
      { status: 200, example: 'FullFile' },
      // Prism reads its own preferences from the same header and ignores this one.
      { Prefer: 'code=200, example=FullFile, log-inclusion, wait=10' },
    );
    if (target.kind !== 'server' || data === undefined) return;
    expect(response.headers.get('preference-applied')).toBe('log-inclusion');
    expect(data.log_inclusion?.log_cid).toBe(data.log_cid);
    const { verifier_key: verifierKey } = (await (
      await fetch(`${target.baseUrl}/log/verifier-key`)
    ).json()) as { verifier_key: string };
    const checkpoint = await verifyScoreInclusion(client, data, {
      verifierKey,
      origin: 'localhost/scenario-scoring/default',
    });
    expect(checkpoint.treeSize).toBeGreaterThan(data.log_inclusion?.leaf_index ?? Number.MAX_SAFE_INTEGER);
  });

  it('says Preference-Applied exactly when the answer carries the proof (wait=0: almost always without)', async () => {
    const { data, response } = await postScore(
      client,
      { json: THIN_FILE },
      { status: 200, example: 'ThinFile' },
      { Prefer: 'code=200, example=ThinFile, log-inclusion, wait=0' },
    );
    // The mock answers every declared header with an example; only the server decides.
    if (target.kind !== 'server') return;
    const applied = response.headers.get('preference-applied');
    expect(applied === 'log-inclusion').toBe(data?.log_inclusion !== undefined);
  });
});
