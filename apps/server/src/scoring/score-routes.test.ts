import { connect } from 'node:net';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import type { Problem, ScoreResponse } from '@scenario-scoring/api-types';
import {
  buildLogRecordV2,
  canonicalBytes,
  cidOfBytes,
  effectivePolicy,
  restateReasons,
  type ScoreContext,
  scoreScorecard2,
} from '@scenario-scoring/engine';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rawExchange } from '../../test/support/raw-http.js';
import { forEachDatabase } from '../../test/support/test-databases.js';
import { testFeatures } from '../../test/support/test-features.js';
import { startTestServer, type TestServer } from '../../test/support/test-server.js';
import { SQLITE_FILE_NAME } from '../storage/sqlite-database.js';

const FULL_FILE = {
  subject: 'applicant-8841',
  context: {
    jurisdiction: 'DE',
    on_time_ratio: 0.96,
    utilization: 0.35,
    history_months: 84,
    debt_to_income: 0.28,
    inquiries_12m: 2,
  },
};
const REQUEST_ID = /^req_[0-9A-HJKMNP-TV-Z]{26}$/;

/** A scoring's answer: its members in the contract's order, the engine's result under the jurisdiction's policy. */
function expectScoreAnswer(body: ScoreResponse, context: ScoreContext): void {
  const policy = effectivePolicy(context.jurisdiction);
  expect(Object.keys(body)).toEqual([
    'id',
    'status',
    'result',
    'model_version',
    'policy_id',
    'policy_version',
    'log_cid',
  ]);
  expect(body).toEqual({
    id: expect.stringMatching(REQUEST_ID),
    status: 'ok',
    result: scoreScorecard2(context, policy),
    model_version: 'scorecard-2',
    policy_id: policy.policy_id,
    policy_version: policy.policy_version,
    log_cid: expect.stringMatching(/^bafkrei[a-z2-7]{52}$/),
  });
}

forEachDatabase('POST /v1/scoring/score', ({ storage, kind, database }) => {
  let server: TestServer;
  let key: string;
  beforeAll(async () => {
    server = await startTestServer({ storage: storage() });
    ({ key } = await testFeatures(storage()).keys.create('scoring'));
  });
  afterAll(() => server.close());

  const score = (body: unknown, headers?: Record<string, string>) =>
    server.request('/v1/scoring/score', { key, body, ...(headers && { headers }) });

  it.runIf(kind === 'sqlite')(
    'when another writer holds the database past the wait, then 503 storage_unavailable with Retry-After, and nothing is stored',
    async () => {
      const records = async () =>
        Number(
          (
            await storage()
              .db.selectFrom('log_records')
              .select((eb) => eb.fn.countAll().as('n'))
              .executeTakeFirstOrThrow()
          ).n,
        );
      expect((await score(FULL_FILE)).status).toBe(200); // the key is looked up and kept
      const before = await records();
      // Another process's connection (a backup tool, an operator's shell) takes the write lock and keeps it
      // past the server's busy timeout (5 s).
      const holder = new DatabaseSync(join(database().options.dataDir, SQLITE_FILE_NAME));
      holder.exec('begin immediate');
      let response: Response;
      try {
        response = await score(FULL_FILE);
      } finally {
        holder.exec('rollback');
        holder.close();
      }
      expect(response.status).toBe(503);
      expect(response.headers.get('retry-after')).toBe('1');
      const problem = (await response.json()) as Problem;
      expect(problem).toMatchObject({ code: 'storage_unavailable', status: 503 });
      expect(await records()).toBe(before);
      expect((await score(FULL_FILE)).status).toBe(200);
    },
    20_000,
  );

  describe('when the request is valid', () => {
    it('answers the seed shape exactly: the engine result, a req_ id and the CID of its own score-log/2 record', async () => {
      const before = new Date().toISOString();
      const response = await score(FULL_FILE);
      const after = new Date().toISOString();
      expect(response.status).toBe(200);
      expect(response.headers.get('content-type')).toMatch(/^application\/json/);
      const body = (await response.json()) as ScoreResponse;
      const policy = effectivePolicy('DE');
      const result = scoreScorecard2(FULL_FILE.context, policy);
      expect(result.reasons.length).toBeGreaterThan(0);
      expectScoreAnswer(body, FULL_FILE.context);
      expect(body.policy_id).toBe('DE');
      expect(response.headers.get('content-language')).toBe('en');
      const bytes = new Uint8Array(
        await (await server.request(`/v1/logs/${body.log_cid}`, { key })).arrayBuffer(),
      );
      const record = JSON.parse(new TextDecoder().decode(bytes));
      expect(record.scored_at >= before && record.scored_at <= after).toBe(true);
      const expected = buildLogRecordV2({
        identity: { kind: 'score', request_id: body.id },
        scored_at: record.scored_at,
        salt: record.salt,
        model_version: 'scorecard-2',
        policy_id: 'DE',
        policy_version: policy.policy_version,
        ...FULL_FILE,
        result,
      });
      expect(Buffer.from(bytes)).toEqual(Buffer.from(canonicalBytes(expected)));
      expect(body.log_cid).toBe(cidOfBytes(bytes));
    });

    it('logs the record durably, so GET /v1/logs/{log_cid} returns bytes whose CID is log_cid', async () => {
      const body = (await (await score(FULL_FILE)).json()) as ScoreResponse;
      const log = await server.request(`/v1/logs/${body.log_cid}`, { key });
      expect(log.status).toBe(200);
      const bytes = new Uint8Array(await log.arrayBuffer());
      expect(cidOfBytes(bytes)).toBe(body.log_cid);
      expect(JSON.parse(new TextDecoder().decode(bytes))).toMatchObject({ subject: 'applicant-8841' });
    });

    it('scores a thin file with only the jurisdiction', async () => {
      const response = await score({ subject: 'applicant-0001', context: { jurisdiction: 'US-CA' } });
      expect(response.status).toBe(200);
      const body = (await response.json()) as ScoreResponse;
      expect(body.result).toEqual(scoreScorecard2({ jurisdiction: 'US-CA' }, effectivePolicy('US-CA')));
    });

    it('when Accept-Language asks for German, then the statements are German and the record keeps English', async () => {
      const response = await score(FULL_FILE, { 'accept-language': 'de-DE, en;q=0.5' });
      expect(response.status).toBe(200);
      expect(response.headers.get('content-language')).toBe('de');
      expect(response.headers.get('vary')).toMatch(/accept-language/i);
      const body = (await response.json()) as ScoreResponse;
      const english = scoreScorecard2(FULL_FILE.context, effectivePolicy('DE')).reasons;
      expect(body.result.reasons).toEqual(restateReasons(english, 'de'));
      expect(body.result.reasons?.[0]?.statement).toBe(
        'Ein zu großer Teil des verfügbaren Kreditrahmens wird genutzt',
      );
      const record = JSON.parse(
        new TextDecoder().decode(
          await (await server.request(`/v1/logs/${body.log_cid}`, { key })).arrayBuffer(),
        ),
      );
      expect(record.result.reasons).toEqual(english);
    });

    it('when Accept-Language names only languages the server lacks, then the answer is English, not an error', async () => {
      const response = await score(FULL_FILE, { 'accept-language': 'fr-FR, ja;q=0.8' });
      expect(response.status).toBe(200);
      expect(response.headers.get('content-language')).toBe('en');
      const body = (await response.json()) as ScoreResponse;
      expect(body.result.reasons?.[0]?.statement).toBe('Too much of the available credit is in use');
    });

    it('when a reason is below 0.05 points, then it is answered with points_below_max 0, as the contract allows', async () => {
      // utilization 0.0001: d = 300 · 0.0001 / 0.9 = 0.0333…, above 0 to six decimals, 0 to one; every other
      // input at its maximum, so it is the only reason.
      const context = {
        jurisdiction: 'FR',
        utilization: 0.0001,
        on_time_ratio: 1,
        history_months: 120,
        debt_to_income: 0,
        inquiries_12m: 0,
      };
      const response = await score({ subject: 'a', context });
      expect(response.status).toBe(200);
      const body = (await response.json()) as ScoreResponse;
      expect(body.result.reasons).toEqual([
        {
          code: 'UT1',
          factor: 'utilization',
          rank: 1,
          points_below_max: 0,
          statement: 'Too much of the available credit is in use',
        },
      ]);
    });

    it('when the jurisdiction has no policy of its own, then it is scored under default and the answer says so', async () => {
      const response = await score({ subject: 'a', context: { jurisdiction: 'FR' } });
      expect(response.status).toBe(200);
      const body = (await response.json()) as ScoreResponse;
      expect(body.policy_id).toBe('default');
      expect(body.model_version).toBe('scorecard-2');
    });

    it('generates an X-Request-Id and uses it as the body id', async () => {
      const response = await score(FULL_FILE);
      const header = response.headers.get('x-request-id');
      expect(header).toMatch(REQUEST_ID);
      expect(((await response.json()) as ScoreResponse).id).toBe(header);
    });

    it('echoes a client X-Request-Id, and still gives the body its own req_ id', async () => {
      const response = await score(FULL_FILE, { 'x-request-id': 'checkout-7f3a' });
      expect(response.headers.get('x-request-id')).toBe('checkout-7f3a');
      expect(((await response.json()) as ScoreResponse).id).toMatch(REQUEST_ID);
    });

    it('replaces an X-Request-Id that is not safe to echo', async () => {
      const response = await score(FULL_FILE, { 'x-request-id': 'has spaces and <tags>' });
      expect(response.headers.get('x-request-id')).toMatch(REQUEST_ID);
    });

    it('accepts application/json with a charset', async () => {
      const response = await score(FULL_FILE, { 'content-type': 'application/json; charset=utf-8' });
      expect(response.status).toBe(200);
    });
  });

  describe('when the request is malformed or hostile, it answers a 4xx problem saying what is wrong', () => {
    const expectProblem = async (response: Response, status: number, code: string) => {
      expect(response.status).toBe(status);
      expect(response.headers.get('content-type')).toMatch(/^application\/problem\+json/);
      const problem = (await response.json()) as Problem;
      expect(problem).toMatchObject({
        type: `/docs#section/errors/${code}`,
        status,
        code,
        instance: '/v1/scoring/score',
        request_id: response.headers.get('x-request-id'),
      });
      return problem;
    };
    const expectInvalid = async (body: unknown, paths: string[], detail: RegExp) => {
      const problem = await expectProblem(await score(body), 400, 'validation_failed');
      expect(problem.title).toBe('Request validation failed');
      expect(problem.errors?.map((e) => e.path).sort()).toEqual([...paths].sort());
      expect(problem.detail).toMatch(detail);
      return problem;
    };

    it('a missing field', async () => {
      await expectInvalid({ subject: 'a' }, ['/body/context'], /\/body\/context must have required property/);
    });

    it('an extra field', async () => {
      await expectInvalid(
        { ...FULL_FILE, score: 900 },
        ['/body/score'],
        /\/body\/score must NOT have additional/,
      );
    });

    it('an unknown context key (a typo)', async () => {
      const body = { subject: 'a', context: { jurisdiction: 'DE', utilisation: 0.3 } };
      await expectInvalid(body, ['/body/context/utilisation'], /utilisation/);
    });

    it('a wrong type', async () => {
      const body = { subject: 'a', context: { jurisdiction: 'DE', utilization: 'high' } };
      await expectInvalid(body, ['/body/context/utilization'], /must be number/);
    });

    it('a value out of range', async () => {
      const body = { subject: 'a', context: { jurisdiction: 'DE', utilization: 11 } };
      await expectInvalid(body, ['/body/context/utilization'], /must be <= 10/);
    });

    it('a malformed jurisdiction', async () => {
      const body = { subject: 'a', context: { jurisdiction: 'germany' } };
      await expectInvalid(body, ['/body/context/jurisdiction'], /must match pattern/);
    });

    it('an empty subject', async () => {
      const body = { subject: '', context: { jurisdiction: 'DE' } };
      await expectInvalid(body, ['/body/subject', '/body/subject'], /fewer than 1 characters/);
    });

    it('a 10 KB subject', async () => {
      const body = { subject: 'x'.repeat(10_240), context: { jurisdiction: 'DE' } };
      await expectInvalid(body, ['/body/subject'], /more than 256 characters/);
    });

    it('every problem at once, not only the first', async () => {
      const body = {
        subject: '',
        context: { jurisdiction: 'de', utilisation: 1, history_months: 1.5 },
        x: 1,
      };
      const problem = await expectInvalid(
        body,
        [
          '/body/x',
          '/body/subject',
          '/body/subject',
          '/body/context/utilisation',
          '/body/context/jurisdiction',
          '/body/context/history_months',
        ],
        /^The request has 5 invalid fields: .*; and 3 more\.$/,
      );
      expect(problem.errors).toContainEqual({
        path: '/body/context/history_months',
        message: 'must be integer',
      });
    });

    it('a JSON array', async () => {
      await expectInvalid([FULL_FILE], ['/body'], /\/body must be object/);
    });

    it('a JSON scalar', async () => {
      await expectInvalid('42', ['/body'], /\/body must be object/);
    });

    it('non-JSON', async () => {
      const problem = await expectProblem(await score('{"subject": "a",}'), 400, 'malformed_json');
      expect(problem.title).toBe('Malformed JSON');
      expect(problem.detail).toMatch(/^The body is not valid JSON: .*position/);
    });

    it('an object naming a member twice, anywhere in the body', async () => {
      // JSON.parse would keep the last: another reader of the same bytes may keep the first.
      const top = await expectProblem(
        await score('{"subject": "a", "context": {"jurisdiction": "DE"}, "subject": "b"}'),
        400,
        'malformed_json',
      );
      expect(top.detail).toBe(
        'The body names the member "subject" twice in one object (/body); send each member once.',
      );
      const nested = await expectProblem(
        await score('{"subject": "a", "context": {"jurisdiction": "DE", "juris\\u0064iction" : "US"}}'),
        400,
        'malformed_json',
      );
      expect(nested.detail).toMatch(/"jurisdiction" twice in one object \(\/body\/context\)/);
      // Deep down (30 levels, under the nesting bound), the pointer in `detail` is cut short.
      const deep = `{"subject": "a", "context": {"jurisdiction": "DE"}, "x": ${'{"yyyyyyyyyy":'.repeat(29)}{"k":1,"k":2}${'}'.repeat(29)}}`;
      const deepProblem = await expectProblem(await score(deep), 400, 'malformed_json');
      expect(deepProblem.detail).toMatch(
        /^The body names the member "k" twice in one object \(\/body\/x\/yyyyyyyyyy\/y.{150,}…\)/,
      );
      expect(deepProblem.detail?.length).toBeLessThan(300);
      // Past 32 levels the body is refused before it is parsed, whatever else is wrong with it.
      const deeper = `{"subject": "a", "context": {"jurisdiction": "DE"}, "x": ${'{"y":'.repeat(5000)}{"k":1,"k":2}${'}'.repeat(5000)}}`;
      expect((await expectProblem(await score(deeper), 400, 'validation_failed')).errors).toEqual([
        { path: '/body', message: 'must not nest deeper than 32 levels' },
      ]);
      // Equal names in different objects are not duplicates.
      const elsewhere = await score('{"subject": "a", "context": {"jurisdiction": "DE", "subject": "a"}}');
      expect((await expectProblem(elsewhere, 400, 'validation_failed')).errors?.map((e) => e.path)).toEqual([
        '/body/context/subject',
      ]);
    });

    it('an empty body', async () => {
      const response = await server.request('/v1/scoring/score', { method: 'POST', key, body: '' });
      const problem = await expectProblem(response, 400, 'validation_failed');
      expect(problem.errors?.map((e) => e.path)).toEqual(['/body/subject', '/body/context']);
    });

    it('a wrong content type', async () => {
      const response = await score('subject=a', { 'content-type': 'application/x-www-form-urlencoded' });
      const problem = await expectProblem(response, 415, 'unsupported_media_type');
      expect(problem.detail).toMatch(/application\/x-www-form-urlencoded.*send it as application\/json/);
    });

    it('a body without a content type', async () => {
      const response = await fetch(`${server.url}/v1/scoring/score`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}` },
        body: new Blob([JSON.stringify(FULL_FILE)]),
      });
      await expectProblem(response, 415, 'unsupported_media_type');
    });

    it('a body over the limit', async () => {
      const body = JSON.stringify({
        subject: 'a',
        context: { jurisdiction: 'DE' },
        pad: 'x'.repeat(1_100_000),
      });
      const problem = await expectProblem(await score(body), 413, 'payload_too_large');
      expect(problem.detail).toMatch(/1048576 bytes/);
    });

    it('a body whose Content-Length is over four times the limit, at once, before any of it is sent, and the connection closed', async () => {
      const { port } = new URL(server.url);
      const socket = connect(Number(port), '127.0.0.1');
      const answer = new Promise<string>((resolve, reject) => {
        let text = '';
        socket.on('data', (chunk) => {
          text += chunk;
        });
        socket.on('close', () => resolve(text));
        socket.on('error', reject);
      });
      // The headers only: a body of 100 MB is declared and never sent.
      socket.write(
        `POST /v1/scoring/score HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${key}\r\n` +
          'Content-Type: application/json\r\nContent-Length: 100000000\r\n\r\n{',
      );
      const text = await answer;
      expect(text).toMatch(/^HTTP\/1\.1 413 /);
      const problem = JSON.parse(text.slice(text.indexOf('\r\n\r\n') + 4)) as Problem;
      expect(problem).toMatchObject({ status: 413, code: 'payload_too_large' });
      expect(problem.detail).toMatch(/limit of 1048576 bytes \(its Content-Length is 100000000\)/);
    });

    it('a body whose Content-Length is over the limit (up to four times), at once, then the rest of it read off and discarded, so that the connection serves the next request', async () => {
      const declared = 2 * 1024 * 1024;
      const head =
        `POST /v1/scoring/score HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${key}\r\n` +
        `Content-Type: application/json\r\nContent-Length: ${declared}\r\n\r\n`;
      const next = 'GET /healthz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n';
      // The whole body at once, as most clients send it, then the next request.
      const text = await rawExchange(server.url, head + '{'.padEnd(declared, ' ') + next);
      const [refused, served] = text.split(/(?=HTTP\/1\.1 \d{3} )/);
      expect(refused).toMatch(/^HTTP\/1\.1 413 /);
      expect(refused).not.toMatch(/^connection: close\r$/im);
      expect(served).toMatch(/^HTTP\/1\.1 200 /);
    });

    it('a charset other than UTF-8', async () => {
      const response = await score(JSON.stringify(FULL_FILE), {
        'content-type': 'application/json; charset=iso-8859-1',
      });
      await expectProblem(response, 415, 'unsupported_media_type');
    });

    // Review: body-parser decoded UTF-16 (and UTF-32), which the UTF-8 check and the duplicate check read
    // as UTF-8 bytes: a duplicate got through, or the check failed with a 500.
    it('UTF-16 and UTF-32, quoted or not, in any case, whatever the body', async () => {
      const body = `{"subject":"\u3a22","subject":"evil","context":{"jurisdiction":"DE"}}`;
      for (const charset of ['utf-16le', 'UTF-16BE', '"utf-16"', 'utf-32', 'utf8']) {
        const response = await fetch(`${server.url}/v1/scoring/score`, {
          method: 'POST',
          headers: { authorization: `Bearer ${key}`, 'content-type': `application/json; charset=${charset}` },
          body: Buffer.from(body, charset.toLowerCase().includes('16le') ? 'utf16le' : 'utf8'),
        });
        const problem = await expectProblem(response, 415, 'unsupported_media_type');
        expect(problem.detail).toMatch(/charset is ".+"; send it as UTF-8/);
      }
      // A parameter's quoted value is not a charset; a read without a body has no charset to check.
      const quoted = await score(JSON.stringify(FULL_FILE), {
        'content-type': 'application/json; foo="a;charset=utf-16"; charset=utf-8',
      });
      expect(quoted.status).toBe(200);
      const read = await fetch(`${server.url}/v1/webhooks`, {
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json; charset=iso-8859-1' },
      });
      expect(read.status).toBe(200);
      for (const charset of ['utf-8', 'UTF-8', '"utf-8"']) {
        const response = await score(JSON.stringify(FULL_FILE), {
          'content-type': `application/json; charset=${charset}`,
        });
        expect(response.status).toBe(200);
      }
    });

    // A hang would hit the test timeout; the answer itself is capped at 100 listed errors.
    it('a body with thousands of unknown keys', async () => {
      const body = { subject: 'a', context: { jurisdiction: 'DE' } } as Record<string, unknown>;
      for (let i = 0; i < 20_000; i++) body[`k${i}`] = i;
      const problem = await expectProblem(await score(body), 400, 'validation_failed');
      expect(problem.errors).toHaveLength(100);
      expect(problem.detail).toMatch(/^The request has 20000 invalid fields/);
    });
  });
});

forEachDatabase('UNKNOWN_JURISDICTION=refuse', ({ storage }) => {
  let server: TestServer;
  let key: string;
  beforeAll(async () => {
    server = await startTestServer({ storage: storage(), config: { unknownJurisdiction: 'refuse' } });
    ({ key } = await testFeatures(storage()).keys.create('scoring'));
  });
  afterAll(() => server.close());

  it('when a scoring names a jurisdiction without a policy, then 422 unknown_jurisdiction lists the known ones, and nothing is logged', async () => {
    const response = await server.request('/v1/scoring/score', {
      key,
      body: { subject: 'a', context: { jurisdiction: 'FR' } },
    });
    expect(response.status).toBe(422);
    const problem = (await response.json()) as Problem;
    expect(problem.code).toBe('unknown_jurisdiction');
    expect(problem.detail).toContain('FR has no scoring policy of its own');
    expect(problem.detail).toContain('Known: DE (and its subdivisions), US (and its subdivisions), US-CA');
    expect(problem.detail).toContain('GET /v1/scoring/policies/{jurisdiction}');
  });

  it('when a code is covered by its own or its country’s entry, then it is scored as before', async () => {
    for (const [jurisdiction, policyId] of [
      ['US-NY', 'US'],
      ['US-CA', 'US-CA'],
      ['DE', 'DE'],
    ]) {
      const response = await server.request('/v1/scoring/score', {
        key,
        body: { subject: 'a', context: { jurisdiction } },
      });
      expect(response.status).toBe(200);
      expect(((await response.json()) as ScoreResponse).policy_id).toBe(policyId);
    }
  });

  it('when a run has an item without a policy, then the run is refused naming the item', async () => {
    const response = await server.request('/v1/scoring/runs', {
      key,
      body: {
        items: [
          { subject: 'a', context: { jurisdiction: 'DE' } },
          { subject: 'b', context: { jurisdiction: 'ZZ' } },
        ],
      },
    });
    expect(response.status).toBe(422);
    const problem = (await response.json()) as Problem;
    expect(problem.code).toBe('unknown_jurisdiction');
    expect(problem.detail).toMatch(/^Item 1: ZZ has no scoring policy/);
  });
});

forEachDatabase('POST /v1/scoring/score in production (no response validation)', ({ storage }) => {
  let server: TestServer;
  let key: string;
  beforeAll(async () => {
    server = await startTestServer({ storage: storage(), config: { nodeEnv: 'production' } });
    ({ key } = await testFeatures(storage()).keys.create('scoring'));
  });
  afterAll(() => server.close());

  it('when the answer is written as text, then it is the same answer, byte for byte, its length in bytes, its non-ASCII intact', async () => {
    for (const request of [
      FULL_FILE,
      { subject: 'applicant-0001', context: { jurisdiction: 'US-CA' } },
      { subject: 'Zoë Ørsted ✓', context: { jurisdiction: 'FR', utilization: 0.99, inquiries_12m: 9 } },
    ]) {
      const response = await server.request('/v1/scoring/score', { key, body: request });
      expect(response.status).toBe(200);
      expect(response.headers.get('content-type')).toBe('application/json; charset=utf-8');
      const bytes = Buffer.from(await response.arrayBuffer());
      expect(Number(response.headers.get('content-length'))).toBe(bytes.length);
      const body = JSON.parse(bytes.toString('utf8')) as ScoreResponse;
      expectScoreAnswer(body, request.context);
      expect(body.result.scenarios[0]?.explain.join('')).toMatch(/[↑↓⇈⇊]/);
      // Byte for byte what JSON.stringify writes of the answer (members in their order), as before.
      expect(bytes.toString('utf8')).toBe(JSON.stringify(body));
      expect(bytes.toString('utf8')).toContain(
        `"result":${JSON.stringify(scoreScorecard2(request.context, effectivePolicy(request.context.jurisdiction)))},`,
      );
    }
  });

  it('when German is asked, then the answer is written the same way, its statements German, its length in bytes', async () => {
    const response = await server.request('/v1/scoring/score', {
      key,
      body: FULL_FILE,
      headers: { 'accept-language': 'de' },
    });
    expect(response.status).toBe(200);
    const bytes = Buffer.from(await response.arrayBuffer());
    expect(Number(response.headers.get('content-length'))).toBe(bytes.length);
    const body = JSON.parse(bytes.toString('utf8')) as ScoreResponse;
    const english = scoreScorecard2(FULL_FILE.context, effectivePolicy('DE')).reasons;
    expect(body.result.reasons).toEqual(restateReasons(english, 'de'));
    expect(body.result.reasons?.[0]?.statement).toBe(
      'Ein zu großer Teil des verfügbaren Kreditrahmens wird genutzt',
    );
    expect(bytes.toString('utf8')).toBe(JSON.stringify(body));
    expect(bytes.toString('utf8')).toContain('"result":{"scenarios":[');
  });
});
