import { randomBytes } from 'node:crypto';
import type { ScoreRequest, ScoringClient } from '@scenario-scoring/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectProblem, getLog, getPolicy, postScore, SCORE_OPERATION } from './harness/contract-calls.js';
import { clientOf } from './harness/contract-client.js';
import { expectUndocumentedProblem, requestExample } from './harness/contract-validator.js';
import { preferHeader } from './harness/documented-answer.js';
import { expectedScoring, REQUEST_ID_PATTERN } from './harness/expected-scoring.js';
import { startTarget, type Target } from './harness/targets.js';

const FULL_FILE = requestExample(SCORE_OPERATION, 'FullFile') as ScoreRequest;
/** A well-formed log CID (the score-log/1 record of the FullFile scoring): these refusals come before any lookup. */
const FULL_FILE_CID = 'bafkreiayofhlaqkaph3jjsfs6wjoujxsu665s7ehdjfl443rszjeaj77vu';
const ONE_MIB = 1_048_576;

let target: Target;
let client: ScoringClient;
beforeAll(async () => {
  target = await startTarget();
  client = clientOf(target);
});
afterAll(() => target?.stop());

/** The full file as JSON padded with whitespace to exactly `bytes` bytes: still a valid request. */
function paddedFullFile(bytes: number): string {
  const json = JSON.stringify(FULL_FILE);
  return `${json.slice(0, -1)}${' '.repeat(bytes - json.length)}}`;
}

describe('the body of a scoring', () => {
  it('is accepted at exactly the 1 MiB limit', async () => {
    const raw = paddedFullFile(ONE_MIB);
    expect(new TextEncoder().encode(raw).length).toBe(ONE_MIB);
    const { data } = await postScore(client, { raw }, { status: 200, example: 'FullFile' });
    expect(data).toMatchObject(expectedScoring(FULL_FILE).response);
  });

  it.each([
    ['one byte over the limit', ONE_MIB + 1],
    ['1.1 MB', 1_100_000],
  ])('is refused %s with 413 payload_too_large', async (_name, bytes) => {
    // Prism has no body limit: the Prefer header asks it for the documented 413.
    const { error } = await postScore(client, { raw: paddedFullFile(bytes) }, { status: 413 });
    expectProblem(target, error, { code: 'payload_too_large', detail: String(ONE_MIB) });
  });

  it.each(['text/plain', 'application/xml', 'application/x-www-form-urlencoded'])(
    'is refused as %s with 415 unsupported_media_type',
    async (contentType) => {
      const { error } = await postScore(
        client,
        { raw: JSON.stringify(FULL_FILE) },
        { status: 415 },
        { 'Content-Type': contentType },
      );
      expectProblem(target, error, { code: 'unsupported_media_type', detail: contentType });
    },
  );

  it('is refused with 400 malformed_json when it is not JSON', async () => {
    // Prism 5.16 never answers a JSON body it cannot parse (its handler then waits for the request's
    // `end` event, which has already fired), so the mock can only be asked for its documented answer.
    const raw =
      target.kind === 'server' ? '{"subject": "applicant-8841", "context": {' : JSON.stringify(FULL_FILE);
    const { error } = await postScore(client, { raw }, { status: 400, example: 'MalformedJson' });
    expectProblem(target, error, { code: 'malformed_json', detail: 'not valid JSON' });
  });
});

describe('request ids', () => {
  it.each(['checkout-7f3a', 'a.b:c_d-e', 'r'.repeat(128)])(
    'echoes a valid X-Request-Id %j in the header and in problems',
    async (id) => {
      const { response } = await postScore(
        client,
        { json: FULL_FILE },
        { status: 200, example: 'FullFile' },
        {
          'X-Request-Id': id,
        },
      );
      const refused = await postScore(
        client,
        { json: { subject: '' } },
        { status: 400, example: 'ValidationFailed' },
        {
          'X-Request-Id': id,
        },
      );
      // The mock always sends its documented id; the server must send back the caller's.
      if (target.kind === 'server') {
        expect(response.headers.get('X-Request-Id')).toBe(id);
        expect(refused.response.headers.get('X-Request-Id')).toBe(id);
        expect((refused.error as { request_id: string }).request_id).toBe(id);
      }
    },
  );

  it.each([
    ['with a space and a !', 'bad id!'],
    ['of 129 characters', 'r'.repeat(129)],
    ['with a slash', 'a/b'],
  ])('replaces an X-Request-Id %s with a new req_ id', async (_name, id) => {
    const { response } = await getPolicy(
      client,
      'DE',
      { status: 200, example: 'OwnEntry' },
      { 'X-Request-Id': id },
    );
    expect(response.headers.get('X-Request-Id')).toMatch(REQUEST_ID_PATTERN);
  });
});

describe('API keys', () => {
  const unknownKey = () => `sk_${randomBytes(30).toString('base64url').replace(/[-_]/g, 'x')}`;

  it('answers a request without a key with 401 missing_api_key and WWW-Authenticate: Bearer', async () => {
    const anonymous = clientOf(target, { omitHeaders: ['Authorization'] });
    const answer = { status: 401, example: 'MissingApiKey' };
    const scored = await postScore(anonymous, { json: FULL_FILE }, answer);
    expectProblem(target, scored.error, { code: 'missing_api_key', instance: '/v1/scoring/score' });
    expect(scored.response.headers.get('WWW-Authenticate')).toMatch(/^Bearer\b/);
    const policy = await getPolicy(anonymous, 'DE', answer);
    expectProblem(target, policy.error, { code: 'missing_api_key' });
    const log = await getLog(anonymous, FULL_FILE_CID, answer);
    expectProblem(target, log.error, { code: 'missing_api_key' });
  });

  it('answers an unknown key with 401 invalid_api_key', async () => {
    const stranger = clientOf(target, { apiKey: unknownKey() });
    const answer = { status: 401, example: 'InvalidApiKey' };
    const scored = await postScore(stranger, { json: FULL_FILE }, answer);
    expectProblem(target, scored.error, { code: 'invalid_api_key' });
    expect(scored.response.headers.get('WWW-Authenticate')).toMatch(/^Bearer\b/);
    expectProblem(target, (await getPolicy(stranger, 'DE', answer)).error, { code: 'invalid_api_key' });
    expectProblem(target, (await getLog(stranger, FULL_FILE_CID, answer)).error, { code: 'invalid_api_key' });
  });

  it('answers a bearer token that is not a key with 401 invalid_api_key', async () => {
    const { error } = await postScore(
      client,
      { json: FULL_FILE },
      { status: 401, example: 'InvalidApiKey' },
      { Authorization: 'Bearer not-a-key' },
    );
    expectProblem(target, error, { code: 'invalid_api_key' });
  });

  it('accepts the key of another tenant, created with the CLI while the server runs', async () => {
    const other = clientOf(target, { apiKey: target.otherTenantKey });
    const { data } = await getPolicy(other, 'FR', { status: 200, example: 'Default' });
    expect(data?.policy_id).toBe('default');
  });
});

describe('HEAD', () => {
  it('is answered wherever GET is, with the same status and type and no body', async () => {
    const headers = { authorization: `Bearer ${target.apiKey}` };
    for (const path of ['/healthz', '/v1/scoring/policies/DE']) {
      const get = await fetch(`${target.baseUrl}${path}`, { headers });
      const head = await fetch(`${target.baseUrl}${path}`, { method: 'HEAD', headers });
      expect(head.status, path).toBe(get.status);
      expect(head.status, path).toBe(200);
      expect(head.headers.get('content-type'), path).toBe(get.headers.get('content-type'));
      expect((await head.arrayBuffer()).byteLength, path).toBe(0);
    }
  });
});

describe('documented operations only', () => {
  it('answers an unknown path with 404', async () => {
    const { response, error } = await client.GET(
      '/v1/scoring/unknown' as '/v1/scoring/policies/{jurisdiction}',
      {
        params: { path: { jurisdiction: 'DE' } },
        headers: preferHeader({ status: 404 }),
      },
    );
    expect(response.status).toBe(404);
    expect(response.headers.get('Content-Type')).toMatch(/^application\/problem\+json/);
    // The contract says nothing of paths it does not have, and Prism improvises its own problem there;
    // the server answers with the API's not_found problem.
    if (target.kind === 'server') {
      expectUndocumentedProblem(response, error);
      expectProblem(target, error, { code: 'not_found', instance: '/v1/scoring/unknown' });
    }
  });
});
