import type { ScoreRequest, ScoringClient } from '@scenario-scoring/client';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { type Body, expectProblem, postScore, SCORE_OPERATION } from './harness/contract-calls.js';
import { clientOf } from './harness/contract-client.js';
import { requestExample } from './harness/contract-validator.js';
import { startTarget, type Target } from './harness/targets.js';

const FULL_FILE = requestExample(SCORE_OPERATION, 'FullFile') as ScoreRequest;
// Prism answers any invalid request with the operation's 400 and its first example, ValidationFailed.
const INVALID = { status: 400, example: 'ValidationFailed' };

let target: Target;
let client: ScoringClient;
beforeAll(async () => {
  target = await startTarget();
  client = clientOf(target);
});
afterAll(() => target?.stop());

/** The full file with `context` entries replaced (or, when `undefined`, removed). */
function withContext(changes: Record<string, unknown>): unknown {
  const context: Record<string, unknown> = { ...FULL_FILE.context, ...changes };
  for (const [key, value] of Object.entries(changes)) if (value === undefined) delete context[key];
  return { subject: FULL_FILE.subject, context };
}

async function expectRefused(body: Body, paths: string[]) {
  const { error } = await postScore(client, body, INVALID);
  expectProblem(target, error, { code: 'validation_failed', paths, instance: '/v1/scoring/score' });
}

describe('a numeric input just outside its range is refused with 400 validation_failed naming it', () => {
  it.each([
    ['on_time_ratio', -0.01],
    ['on_time_ratio', 1.01],
    ['utilization', -0.01],
    ['utilization', 10.01],
    ['history_months', -1],
    ['history_months', 1201],
    ['history_months', 1.5],
    ['debt_to_income', -0.01],
    ['debt_to_income', 10.01],
    ['inquiries_12m', -1],
    ['inquiries_12m', 101],
    ['inquiries_12m', 2.5],
  ])('%s = %d', async (input, value) => {
    await expectRefused({ json: withContext({ [input]: value }) }, [`/body/context/${input}`]);
  });
});

describe('a value of the wrong type is refused with 400 validation_failed naming it', () => {
  it.each([
    ['utilization', '0.35'],
    ['history_months', '84'],
    ['on_time_ratio', null],
    ['inquiries_12m', true],
    ['debt_to_income', [0.28]],
    ['jurisdiction', 276],
  ])('%s = %j', async (input, value) => {
    await expectRefused({ json: withContext({ [input]: value }) }, [`/body/context/${input}`]);
  });

  it.each([
    ['subject', { subject: 8841, context: FULL_FILE.context }, '/body/subject'],
    ['context', { subject: 'applicant-1', context: 'DE' }, '/body/context'],
    ['context', { subject: 'applicant-1', context: [FULL_FILE.context] }, '/body/context'],
  ])('%s of another type', async (_name, json, path) => {
    await expectRefused({ json }, [path]);
  });
});

describe('a malformed jurisdiction is refused with 400 validation_failed', () => {
  it.each(['de', 'DEU', 'US-CALIF', 'D', 'US-', 'US_CA', ' DE', ''])('%j', async (jurisdiction) => {
    await expectRefused({ json: withContext({ jurisdiction }) }, ['/body/context/jurisdiction']);
  });
});

describe('a bad subject is refused with 400 validation_failed', () => {
  it.each([
    ['an empty subject', ''],
    ['a 257-character subject', 's'.repeat(257)],
    ['a 10 KB subject', 'x'.repeat(10 * 1024)],
    ['a subject with a control character', 'applicant\n8841'],
  ])('%s', async (_name, subject) => {
    await expectRefused({ json: { subject, context: FULL_FILE.context } }, ['/body/subject']);
  });
});

describe('missing and extra fields are refused with 400 validation_failed', () => {
  it('an unknown context key, such as the typo utilisation', async () => {
    await expectRefused({ json: withContext({ utilisation: 0.35 }) }, ['/body/context/utilisation']);
  });

  it('every problem at once, as in the documented example', async () => {
    await expectRefused({ json: withContext({ utilization: 11, utilisation: 0.35 }) }, [
      '/body/context/utilization',
      '/body/context/utilisation',
    ]);
  });

  it('an extra top-level field', async () => {
    await expectRefused({ json: { ...FULL_FILE, score: 700 } }, ['/body/score']);
  });

  it.each([
    ['subject', { context: FULL_FILE.context }, '/body/subject'],
    ['context', { subject: 'applicant-1' }, '/body/context'],
    ['jurisdiction', withContext({ jurisdiction: undefined }), '/body/context/jurisdiction'],
  ])('a missing %s', async (_name, json, path) => {
    await expectRefused({ json }, [path]);
  });

  it('several bad fields, each listed', async () => {
    await expectRefused({ json: { subject: '', context: { jurisdiction: 'de', utilization: 11 } } }, [
      '/body/subject',
      '/body/context/jurisdiction',
      '/body/context/utilization',
    ]);
  });
});

describe('a body that is not an object is refused with 400 validation_failed', () => {
  it.each([
    ['a JSON array', JSON.stringify([FULL_FILE])],
    ['null', 'null'],
    ['a JSON string', '"applicant-8841"'],
    ['a JSON number', '42'],
    ['an empty object', '{}'],
  ])('%s', async (name, raw) => {
    const paths = name === 'an empty object' ? ['/body/subject', '/body/context'] : ['/body'];
    await expectRefused({ raw }, paths);
  });

  it('no body at all', async () => {
    await expectRefused({ none: true }, ['/body']);
  });
});
