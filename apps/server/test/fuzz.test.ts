/**
 * Contract fuzzing against the built server, on SQLite and PostgreSQL: for every operation, requests
 * generated from the bundled contract's schemas (fast-check), valid ones — which must be accepted — and
 * invalid or hostile ones — which must be refused with a documented 4xx — plus stateful chains over the
 * webhook resources. Every answer must be documented by the contract for its operation and valid against
 * it, and none may be a 5xx. FUZZ_RUNS (default 60) sets the runs per property; each operation gets two
 * properties (valid and invalid), so about 2 × FUZZ_RUNS requests per operation per database.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { gzipSync } from 'node:zlib';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ContractOperation } from '../../../test/contract/src/harness/contract-validator.js';
import { type FuzzRequest, FuzzTarget } from './support/fuzz-target.js';
import { hostileString, wrongTyped } from './support/hostile-values.js';
import { arbitraryOf, type Bundle, type Schema } from './support/schema-arbitrary.js';
import { DATABASE_KINDS } from './support/test-databases.js';

const RUNS = Number(process.env.FUZZ_RUNS || 60);
const require = createRequire(import.meta.url);
const bundle = JSON.parse(
  readFileSync(
    join(dirname(require.resolve('@scenario-scoring/openapi/package.json')), 'dist', 'openapi.json'),
    'utf8',
  ),
) as Bundle;
const schema = (name: string): Schema => ({ $ref: `#/components/schemas/${name}` });
const EVENT_TYPES = ['run.completed', 'run.failed', 'policy.escalated', 'webhook.test'];

/** Request bodies valid for the contract and accepted by the server's semantics (a reachable URL, known event types). */
function validBodies(receiverUrl: string) {
  const overrides = {
    WebhookUrl: fc.webPath().map((path) => `${receiverUrl}${path.replace(/[^A-Za-z0-9/_.-]/g, '')}`),
    EventFilter: fc.oneof(fc.constant(['*']), fc.subarray(EVENT_TYPES, { minLength: 1 })),
  };
  const of = (name: string) => arbitraryOf(schema(name), bundle, overrides);
  return {
    score: of('ScoreRequest'),
    run: arbitraryOf(
      {
        ...(bundle.components.schemas.CreateRunRequest as Schema),
        properties: {
          items: { type: 'array', minItems: 1, maxItems: 3, items: schema('ScoreRequest') },
          deadline_seconds: { type: 'integer', minimum: 1, maximum: 86400 },
        },
      },
      bundle,
      overrides,
    ),
    register: of('RegisterWebhookRequest'),
    update: of('UpdateWebhookRequest'),
    rotate: of('RotateSecretRequest'),
    jurisdiction: of('Jurisdiction') as fc.Arbitrary<string>,
  };
}

/** Every leaf of a JSON value, as a path of keys. */
function leaves(value: unknown, at: (string | number)[] = []): (string | number)[][] {
  if (Array.isArray(value)) return value.flatMap((item, i) => leaves(item, [...at, i]));
  if (value !== null && typeof value === 'object')
    return Object.entries(value).flatMap(([k, v]) => leaves(v, [...at, k]));
  return [at];
}

function setAt(value: unknown, path: (string | number)[], replacement: unknown): unknown {
  if (path.length === 0) return replacement;
  const copy = (Array.isArray(value) ? [...value] : { ...(value as object) }) as Record<
    string | number,
    unknown
  >;
  const [head, ...rest] = path as [string | number, ...(string | number)[]];
  copy[head] = setAt(copy[head], rest, replacement);
  return copy;
}

function getAt(value: unknown, path: (string | number)[]): unknown {
  return path.reduce<unknown>((at, key) => (at as Record<string | number, unknown>)?.[key], value);
}

/** An invalid or hostile version of a valid body, and whether the server must refuse it (a 4xx). */
const mutation = (valid: fc.Arbitrary<unknown>) =>
  fc
    .tuple(valid, fc.nat(), hostileString, wrongTyped, fc.nat({ max: 5 }))
    .map(([body, pick, hostile, wrong, kind]) => {
      const paths = leaves(body);
      const path = paths[pick % Math.max(1, paths.length)] ?? [];
      switch (kind) {
        case 0: {
          // A hostile string in place of a string leaf (or beside it, as an unknown key).
          if (typeof getAt(body, path) === 'string')
            return { body: JSON.stringify(setAt(body, path, hostile.value)), mustRefuse: hostile.refused };
          return { body: JSON.stringify({ ...(body as object), [hostile.value]: 1 }), mustRefuse: true };
        }
        case 1:
          return { body: JSON.stringify(setAt(body, path, wrong)), mustRefuse: false };
        case 2:
          return { body: JSON.stringify({ ...(body as object), unexpected_field: true }), mustRefuse: true };
        case 3:
          return { body: JSON.stringify(body).slice(0, -1), mustRefuse: true };
        case 4:
          return {
            body: Buffer.concat([
              Buffer.from(JSON.stringify(body).slice(0, -2)),
              Buffer.from([0xc3, 0x28, 0x22, 0x7d]),
            ]),
            mustRefuse: true,
          };
        default:
          return { body: gzipSync(JSON.stringify(body)).subarray(0, 12), gzip: true, mustRefuse: true };
      }
    });

/** A path segment that is not a valid id: hostile text, percent-encoded. */
const badSegment = fc
  .oneof(
    hostileString.filter((h) => h.value.length < 1000).map((h) => h.value),
    fc.constantFrom(
      'wh_',
      'run_0',
      '..',
      '%00',
      'wh_01JZ4VD5E7F9G1H3J5K7M9N1P3',
      'dlv_01JZ4VD5E7F9G1H3J5K7M9N1P3',
    ),
  )
  .map(
    (text) =>
      encodeURIComponent(text.replace(/[\ud800-\udfff]/gu, '\ufffd'))
        // A `.` or `..` segment (even as %2E) is resolved away by every URL parser before sending.
        .replace(/^\.{1,2}$/, 'x$&')
        .slice(0, 2000) || 'x',
  );

/** A query `limit` that is not a decimal integer within bounds. */
const badLimit = fc.oneof(
  fc.constantFrom('0x10', '1e1', '+5', ' 5', '0', '-1', '1001', '5.0', '', 'NaN', '9'.repeat(30)),
  hostileString
    .filter((h) => h.value.length < 1000)
    .map((h) => h.value.replace(/[\ud800-\udfff]/gu, '\ufffd')),
);

for (const kind of DATABASE_KINDS) {
  describe(`contract fuzzing on the built server (${kind})`, () => {
    const target = new FuzzTarget(kind);
    let bodies: ReturnType<typeof validBodies>;
    const ids = { run: '', cid: '', webhook: '', webhookForPatch: '', delivery: '' };

    const op = (method: ContractOperation['method'], path: ContractOperation['path']): ContractOperation => ({
      method,
      path,
    });
    const send = (request: FuzzRequest) => target.send(request);
    const post = (
      operation: ContractOperation,
      url: string,
      body: unknown,
      headers?: Record<string, string>,
    ) =>
      send({
        operation,
        url,
        method: operation.method.toUpperCase(),
        body: JSON.stringify(body),
        ...(headers && { headers }),
      });
    const get = (operation: ContractOperation, url: string) =>
      send({ operation, url, method: operation.method.toUpperCase() });

    const SCORE = op('post', '/v1/scoring/score');
    const POLICY = op('get', '/v1/scoring/policies/{jurisdiction}');
    const RUNS_OP = op('post', '/v1/scoring/runs');
    const RUN = op('get', '/v1/scoring/runs/{id}');
    const RESULTS = op('get', '/v1/scoring/runs/{id}/results');
    const LOG = op('get', '/v1/logs/{cid}');
    const REGISTER = op('post', '/v1/webhooks/register');
    const LIST = op('get', '/v1/webhooks');
    const WEBHOOK = op('get', '/v1/webhooks/{id}');
    const PATCH = op('patch', '/v1/webhooks/{id}');
    const DELETE = op('delete', '/v1/webhooks/{id}');
    const ROTATE = op('post', '/v1/webhooks/{id}/rotate-secret');
    const TEST = op('post', '/v1/webhooks/{id}/test');
    const DELIVERIES = op('get', '/v1/webhooks/{id}/deliveries');
    const ATTEMPTS = op('get', '/v1/webhooks/{id}/deliveries/{delivery_id}/attempts');
    const REDELIVER = op('post', '/v1/webhooks/{id}/deliveries/{delivery_id}/redeliver');

    beforeAll(async () => {
      await target.start();
      bodies = validBodies(target.receiverUrl);
      const scored = await post(SCORE, '/v1/scoring/score', {
        subject: 's',
        context: { jurisdiction: 'DE' },
      });
      ids.cid = (scored.body as { log_cid: string }).log_cid;
      const run = await post(RUNS_OP, '/v1/scoring/runs', {
        items: [{ subject: 's', context: { jurisdiction: 'DE' } }],
      });
      ids.run = (run.body as { id: string }).id;
      const register = (
        await post(REGISTER, '/v1/webhooks/register', { url: target.receiverUrl, events: ['*'] })
      ).body as { id: string };
      ids.webhook = register.id;
      ids.webhookForPatch = (
        (await post(REGISTER, '/v1/webhooks/register', { url: target.receiverUrl, events: ['*'] })).body as {
          id: string;
        }
      ).id;
      await post(TEST, `/v1/webhooks/${ids.webhook}/test`, undefined);
      for (let i = 0; i < 100 && ids.delivery === ''; i++) {
        const list = (await get(DELIVERIES, `/v1/webhooks/${ids.webhook}/deliveries`)).body as {
          data: { id: string }[];
        };
        ids.delivery = list.data[0]?.id ?? '';
        if (ids.delivery === '') await new Promise((resolve) => setTimeout(resolve, 50));
      }
      expect(ids.delivery).toMatch(/^dlv_/);
    }, 120_000);

    afterAll(async () => {
      const lines = target.errorLines();
      await target.stop();
      // The counts of this run, for the report (per operation, this database).
      console.info(`fuzz counts (${kind}, FUZZ_RUNS=${RUNS}):`, Object.fromEntries(target.counts));
      expect(lines, JSON.stringify(lines.slice(0, 3))).toEqual([]);
    }, 60_000);

    const check = (property: fc.IAsyncProperty<[unknown]> | fc.IAsyncPropertyWithHooks<[unknown]>) =>
      fc.assert(property as fc.IAsyncProperty<[unknown]>, { numRuns: RUNS });

    // --- Valid requests: accepted, every one.
    it('accepts every valid request to every operation', async () => {
      const expectStatus = async (answer: Promise<{ status: number; body: unknown }>, status: number) => {
        const { status: actual, body } = await answer;
        expect(actual, JSON.stringify(body).slice(0, 300)).toBe(status);
      };
      await check(
        fc.asyncProperty(bodies.score, (body) => expectStatus(post(SCORE, '/v1/scoring/score', body), 200)),
      );
      await check(
        fc.asyncProperty(bodies.jurisdiction, (j) =>
          expectStatus(get(POLICY, `/v1/scoring/policies/${j}`), 200),
        ),
      );
      await check(
        fc.asyncProperty(bodies.run, fc.option(fc.uuid()), (body, key) =>
          expectStatus(
            post(RUNS_OP, '/v1/scoring/runs', body, key ? { 'idempotency-key': key } : undefined),
            202,
          ),
        ) as never,
      );
      await check(
        fc.asyncProperty(fc.constant(0), () =>
          expectStatus(get(RUN, `/v1/scoring/runs/${ids.run}`), 200),
        ) as never,
      );
      await check(
        fc.asyncProperty(fc.option(fc.integer({ min: 1, max: 1000 })), (limit) =>
          expectStatus(
            get(RESULTS, `/v1/scoring/runs/${ids.run}/results${limit ? `?limit=${limit}` : ''}`),
            200,
          ),
        ) as never,
      );
      await check(
        fc.asyncProperty(fc.constant(0), () => expectStatus(get(LOG, `/v1/logs/${ids.cid}`), 200)) as never,
      );
      await check(
        fc.asyncProperty(bodies.register, fc.option(fc.uuid()), async (body, key) => {
          const created = await post(
            REGISTER,
            '/v1/webhooks/register',
            body,
            key ? { 'idempotency-key': key } : undefined,
          );
          expect(created.status).toBe(201);
          // Each valid registration is also deleted, valid too: the tenant's limit is never the reason.
          const id = (created.body as { id: string }).id;
          await expectStatus(send({ operation: DELETE, url: `/v1/webhooks/${id}`, method: 'DELETE' }), 204);
        }) as never,
      );
      await check(
        fc.asyncProperty(fc.option(fc.integer({ min: 1, max: 100 })), (limit) =>
          expectStatus(get(LIST, `/v1/webhooks${limit ? `?limit=${limit}` : ''}`), 200),
        ) as never,
      );
      await check(
        fc.asyncProperty(fc.constant(0), () =>
          expectStatus(get(WEBHOOK, `/v1/webhooks/${ids.webhook}`), 200),
        ) as never,
      );
      await check(
        fc.asyncProperty(bodies.update, (body) =>
          expectStatus(
            send({
              operation: PATCH,
              url: `/v1/webhooks/${ids.webhookForPatch}`,
              method: 'PATCH',
              body: JSON.stringify(body),
            }),
            200,
          ),
        ) as never,
      );
      await check(
        fc.asyncProperty(bodies.rotate, (body) =>
          expectStatus(post(ROTATE, `/v1/webhooks/${ids.webhook}/rotate-secret`, body), 200),
        ) as never,
      );
      await check(
        fc.asyncProperty(fc.constant(0), () =>
          expectStatus(post(TEST, `/v1/webhooks/${ids.webhook}/test`, undefined), 202),
        ) as never,
      );
      await check(
        fc.asyncProperty(fc.option(fc.integer({ min: 1, max: 100 })), (limit) =>
          expectStatus(
            get(DELIVERIES, `/v1/webhooks/${ids.webhook}/deliveries${limit ? `?limit=${limit}` : ''}`),
            200,
          ),
        ) as never,
      );
      await check(
        fc.asyncProperty(fc.constant(0), () =>
          expectStatus(get(ATTEMPTS, `/v1/webhooks/${ids.webhook}/deliveries/${ids.delivery}/attempts`), 200),
        ) as never,
      );
      await check(
        fc.asyncProperty(fc.constant(0), () =>
          expectStatus(
            post(REDELIVER, `/v1/webhooks/${ids.webhook}/deliveries/${ids.delivery}/redeliver`, undefined),
            202,
          ),
        ) as never,
      );
      // The probes take no input: a few requests each, with or without a key, must answer 200.
      for (const path of ['/healthz', '/readyz'] as const) {
        for (let i = 0; i < 5; i++) await expectStatus(get(op('get', path), path), 200);
      }
    }, 600_000);

    // --- Invalid and hostile requests: a documented 4xx, never a 5xx.
    it('refuses every invalid or hostile request with a documented 4xx', async () => {
      const refusing =
        (operation: ContractOperation, url: string, method: string) =>
        (m: { body: string | Buffer; mustRefuse: boolean; gzip?: boolean }) =>
          send({
            operation,
            url,
            method,
            body: m.body,
            ...(m.gzip && { headers: { 'content-encoding': 'gzip' } }),
          }).then((answer) => {
            if (m.mustRefuse)
              expect(answer.status, JSON.stringify(answer.body).slice(0, 300)).toBeGreaterThanOrEqual(400);
          });
      const bodyCases: [ContractOperation, string, string, fc.Arbitrary<unknown>][] = [
        [SCORE, '/v1/scoring/score', 'POST', bodies.score],
        [RUNS_OP, '/v1/scoring/runs', 'POST', bodies.run],
        [REGISTER, '/v1/webhooks/register', 'POST', bodies.register],
        [PATCH, `/v1/webhooks/${ids.webhookForPatch}`, 'PATCH', bodies.update],
        [
          ROTATE,
          `/v1/webhooks/${ids.webhook}/rotate-secret`,
          'POST',
          bodies.rotate.map((b) => ({ grace_period_seconds: 0, ...(b as object) })),
        ],
      ];
      for (const [operation, url, method, valid] of bodyCases)
        await check(fc.asyncProperty(mutation(valid), refusing(operation, url, method)) as never);

      const refusedGet = (operation: ContractOperation, url: (segment: string) => string) =>
        check(
          fc.asyncProperty(badSegment, async (segment) => {
            const answer = await send({
              operation,
              url: url(segment),
              method: operation.method.toUpperCase(),
            });
            expect(answer.status).toBeGreaterThanOrEqual(400);
          }) as never,
        );
      await refusedGet(POLICY, (s) => `/v1/scoring/policies/${s}`);
      await refusedGet(RUN, (s) => `/v1/scoring/runs/${s}`);
      await refusedGet(RESULTS, (s) => `/v1/scoring/runs/${s}/results`);
      await refusedGet(LOG, (s) => `/v1/logs/${s}`);
      await refusedGet(WEBHOOK, (s) => `/v1/webhooks/${s}`);
      await refusedGet(DELETE, (s) => `/v1/webhooks/${s}`);
      await refusedGet(TEST, (s) => `/v1/webhooks/${s}/test`);
      await refusedGet(DELIVERIES, (s) => `/v1/webhooks/${s}/deliveries`);
      await refusedGet(ATTEMPTS, (s) => `/v1/webhooks/${ids.webhook}/deliveries/${s}/attempts`);
      await refusedGet(REDELIVER, (s) => `/v1/webhooks/${ids.webhook}/deliveries/${s}/redeliver`);
      for (const [operation, url] of [
        [LIST, '/v1/webhooks'],
        [RESULTS, `/v1/scoring/runs/${ids.run}/results`],
        [DELIVERIES, `/v1/webhooks/${ids.webhook}/deliveries`],
      ] as const) {
        await check(
          fc.asyncProperty(badLimit, async (limit) => {
            const answer = await get(operation, `${url}?limit=${encodeURIComponent(limit)}`);
            expect(answer.status).toBe(400);
          }) as never,
        );
      }
    }, 600_000);

    // --- Stateful chains over one webhook's life.
    it('keeps every chain create → read → test → deliveries → attempts → redeliver → rotate → patch → delete → read consistent', async () => {
      await fc.assert(
        fc.asyncProperty(bodies.register, bodies.rotate, bodies.update, async (register, rotate, update) => {
          const created = await post(REGISTER, '/v1/webhooks/register', register);
          expect(created.status).toBe(201);
          const { id } = created.body as { id: string };
          expect((await get(WEBHOOK, `/v1/webhooks/${id}`)).status).toBe(200);
          expect((await post(TEST, `/v1/webhooks/${id}/test`, undefined)).status).toBe(202);
          let delivery = '';
          for (let i = 0; i < 100 && delivery === ''; i++) {
            const list = (await get(DELIVERIES, `/v1/webhooks/${id}/deliveries`)).body as {
              data: { id: string }[];
            };
            delivery = list.data[0]?.id ?? '';
            if (delivery === '') await new Promise((resolve) => setTimeout(resolve, 20));
          }
          expect(delivery).toMatch(/^dlv_/);
          expect((await get(ATTEMPTS, `/v1/webhooks/${id}/deliveries/${delivery}/attempts`)).status).toBe(
            200,
          );
          expect(
            (await post(REDELIVER, `/v1/webhooks/${id}/deliveries/${delivery}/redeliver`, undefined)).status,
          ).toBe(202);
          expect((await post(ROTATE, `/v1/webhooks/${id}/rotate-secret`, rotate)).status).toBe(200);
          const patched = await send({
            operation: PATCH,
            url: `/v1/webhooks/${id}`,
            method: 'PATCH',
            body: JSON.stringify(update),
          });
          expect(patched.status).toBe(200);
          expect(
            (await send({ operation: DELETE, url: `/v1/webhooks/${id}`, method: 'DELETE' })).status,
          ).toBe(204);
          expect((await get(WEBHOOK, `/v1/webhooks/${id}`)).status).toBe(404);
          expect((await get(DELIVERIES, `/v1/webhooks/${id}/deliveries`)).status).toBe(404);
        }),
        { numRuns: Math.max(5, Math.ceil(RUNS / 6)) },
      );
    }, 600_000);
  });
}
