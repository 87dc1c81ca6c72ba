/**
 * Contract fuzzing against the built server, on SQLite and PostgreSQL: for every operation, requests
 * generated from the bundled contract's schemas (fast-check), valid ones — which must be accepted — and
 * invalid or hostile ones — which must be refused with a documented 4xx — plus stateful chains over the
 * webhook resources. Every answer must be documented by the contract for its operation and valid against
 * it, and none may be a 5xx. FUZZ_RUNS (default 150) sets the runs per property; each operation gets two
 * properties (valid and invalid), so about 2 × FUZZ_RUNS requests per operation per database.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { gzipSync } from 'node:zlib';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ContractOperation } from '../../../test/contract/src/harness/contract-validator.js';
import type { OpenApiDocument } from '../src/common/contract.js';
import { contractOperations } from '../src/http/contract-routes.js';
import { type FuzzAnswer, type FuzzRequest, FuzzTarget } from './support/fuzz-target.js';
import { hostileString, wrongTyped } from './support/hostile-values.js';
import { badInteger, inPath, MAX_SAFE, TWO_POW_53 } from './support/log-fuzz-values.js';
import { arbitraryOf, type Bundle, type Schema } from './support/schema-arbitrary.js';
import { DATABASE_KINDS } from './support/test-databases.js';

const RUNS = Number(process.env.FUZZ_RUNS || 150);
const require = createRequire(import.meta.url);
const bundle = JSON.parse(
  readFileSync(
    join(dirname(require.resolve('@scenario-scoring/openapi/package.json')), 'dist', 'openapi.json'),
    'utf8',
  ),
) as Bundle;
const schema = (name: string): Schema => ({ $ref: `#/components/schemas/${name}` });
const EVENT_TYPES = [
  'run.completed',
  'run.failed',
  'policy.escalated',
  'webhook.test',
  'subject.erased',
  'webhook.disabled',
  'delivery.exhausted',
];

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
    erasure: of('CreateErasureRequest'),
    subjectRecords: of('SubjectRecordsRequest'),
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
    // The log as the suite saw it: sizes of signed checkpoints, and records with their leaf index.
    const log = { sizes: new Set<number>(), records: [] as { cid: string; leaf: number }[] };

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
    const NOTICE = op('get', '/v1/logs/{cid}/notice');
    const MODELS = op('get', '/v1/scoring/models');
    const MODEL = op('get', '/v1/scoring/models/{model_version}');
    const REGISTER = op('post', '/v1/webhooks/register');
    const LIST = op('get', '/v1/webhooks');
    const WEBHOOK = op('get', '/v1/webhooks/{id}');
    const PATCH = op('patch', '/v1/webhooks/{id}');
    const DELETE = op('delete', '/v1/webhooks/{id}');
    const ROTATE = op('post', '/v1/webhooks/{id}/rotate-secret');
    const TEST = op('post', '/v1/webhooks/{id}/test');
    const REPLAY = op('post', '/v1/webhooks/{id}/replay');
    const DELIVERIES = op('get', '/v1/webhooks/{id}/deliveries');
    const ATTEMPTS = op('get', '/v1/webhooks/{id}/deliveries/{delivery_id}/attempts');
    const REDELIVER = op('post', '/v1/webhooks/{id}/deliveries/{delivery_id}/redeliver');
    const CHECKPOINT = op('get', '/v1/log/checkpoint');
    const INCLUSION = op('get', '/v1/log/proofs/inclusion/{cid}');
    const CONSISTENCY = op('get', '/v1/log/proofs/consistency');
    const TILE = op('get', '/v1/log/tiles/{level}/{index}');
    const VERIFIER_KEY = op('get', '/log/verifier-key');
    const ERASE = op('post', '/v1/erasures');
    const ERASURE = op('get', '/v1/erasures/{id}');
    const ERASED_CIDS = op('get', '/v1/erasures/{id}/log-cids');
    const SUBJECT_RECORDS = op('post', '/v1/subjects/records');
    const ROOT_CHECKPOINT = op('get', '/log/root/checkpoint');
    const ROOT_CONSISTENCY = op('get', '/log/root/proofs/consistency');
    const ROOT_INCLUSION = op('get', '/v1/log/root/proofs/inclusion');
    const PROOF_FILE = op('get', '/v1/logs/{cid}/proof-file');
    // The root log as the suite saw it: sizes of root checkpoints served.
    const rootSizes = new Set<number>();
    /** The latest root checkpoint's size (waited for until the root log signed one), remembered. */
    const currentRootSize = async () => {
      for (let i = 0; i < 200; i++) {
        const answer = await get(ROOT_CHECKPOINT, '/log/root/checkpoint');
        if (answer.status === 200) {
          const size = (answer.body as { tree_size: number }).tree_size;
          rootSizes.add(size);
          return size;
        }
        expect(answer.status, JSON.stringify(answer.body).slice(0, 300)).toBe(404);
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
      throw new Error('the root log served no checkpoint within 5 s');
    };

    /** The record's inclusion proof, waited for until a signed checkpoint holds it; records the sizes seen. */
    const sequenced = async (cid: string) => {
      for (let i = 0; i < 200; i++) {
        const answer = await get(INCLUSION, `/v1/log/proofs/inclusion/${cid}`);
        if (answer.status === 200) {
          const proof = answer.body as { leaf_index: number; tree_size: number };
          log.sizes.add(proof.tree_size);
          log.records.push({ cid, leaf: proof.leaf_index });
          return;
        }
        expectNotSequenced(answer);
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
      throw new Error(`${cid} was not sequenced within 5 s`);
    };
    /** The documented answer for a record logged but not sequenced yet. */
    const expectNotSequenced = (answer: FuzzAnswer) => {
      expect(answer.status, JSON.stringify(answer.body)).toBe(409);
      expect((answer.body as { code: string }).code).toBe('log_record_not_sequenced');
      expect(answer.headers.get('retry-after')).toMatch(/^[1-9]\d*$/);
    };
    /** The latest signed checkpoint's size, remembered as a signed size. */
    const currentSize = async () => {
      const answer = await get(CHECKPOINT, '/v1/log/checkpoint');
      expect(answer.status).toBe(200);
      const size = (answer.body as { tree_size: number }).tree_size;
      log.sizes.add(size);
      return size;
    };
    const signedSizes = () => [...log.sizes].sort((a, b) => a - b);

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
      // A few records, each waited for until a checkpoint holds it: several signed tree sizes to prove against.
      await sequenced(ids.cid);
      for (let i = 0; i < 3; i++) {
        const scored = await post(SCORE, '/v1/scoring/score', {
          subject: `log-${i}`,
          context: { jurisdiction: 'FR' },
        });
        await sequenced((scored.body as { log_cid: string }).log_cid);
      }
      await currentSize();
    }, 120_000);

    afterAll(async () => {
      const lines = target.errorLines();
      await target.stop();
      // The counts of this run, for the report (per operation, this database).
      console.info(`fuzz counts (${kind}, FUZZ_RUNS=${RUNS}):`, Object.fromEntries(target.counts));
      for (const phase of ['valid', 'invalid'] as const)
        console.info(`fuzz ${phase} requests (${kind}):`, Object.fromEntries(target.exercised[phase]));
      expect(lines, JSON.stringify(lines.slice(0, 3))).toEqual([]);
    }, 60_000);

    const check = (property: fc.IAsyncProperty<[unknown]> | fc.IAsyncPropertyWithHooks<[unknown]>) =>
      fc.assert(property as fc.IAsyncProperty<[unknown]>, { numRuns: RUNS });

    // --- Valid requests: accepted, every one.
    it('accepts every valid request to every operation', async () => {
      target.phase = 'valid';
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
        fc.asyncProperty(fc.constantFrom('en', 'de', 'fr', '*', 'de-DE;q=0.5, en'), (language) =>
          expectStatus(
            send({
              operation: NOTICE,
              url: `/v1/logs/${ids.cid}/notice`,
              method: 'GET',
              headers: { 'accept-language': language },
            }),
            200,
          ),
        ) as never,
      );
      await check(
        fc.asyncProperty(fc.constant(0), () => expectStatus(get(MODELS, '/v1/scoring/models'), 200)) as never,
      );
      const subjects = fc.stringMatching(/^[A-Za-z0-9._-]{1,64}$/);
      await check(
        fc.asyncProperty(subjects, fc.option(fc.integer({ min: 1, max: 100 })), (subject, limit) =>
          expectStatus(
            post(SUBJECT_RECORDS, '/v1/subjects/records', limit ? { subject, limit } : { subject }),
            200,
          ),
        ) as never,
      );
      await check(
        fc.asyncProperty(
          subjects,
          fc.option(fc.uuid()),
          fc.option(fc.integer({ min: 1, max: 1000 })),
          async (subject, key, limit) => {
            // Subjects no scoring used: an erasure of nothing completes with zero counts, harming no other check.
            const erasure = await post(
              ERASE,
              '/v1/erasures',
              { subject: `fuzz-erasure-${subject}` },
              key ? { 'idempotency-key': key } : undefined,
            );
            expect(erasure.status).toBe(202);
            const id = (erasure.body as { id: string }).id;
            await expectStatus(get(ERASURE, `/v1/erasures/${id}`), 200);
            await expectStatus(
              get(ERASED_CIDS, `/v1/erasures/${id}/log-cids${limit ? `?limit=${limit}` : ''}`),
              200,
            );
          },
        ) as never,
      );
      await check(
        fc.asyncProperty(fc.constantFrom('scorecard-1', 'scorecard-2'), (version) =>
          expectStatus(get(MODEL, `/v1/scoring/models/${version}`), 200),
        ) as never,
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
        fc.asyncProperty(fc.integer({ min: 1, max: 7 * 24 * 60 }), fc.option(fc.uuid()), (minutes, key) => {
          const until = new Date();
          const since = new Date(until.getTime() - minutes * 60_000);
          return expectStatus(
            post(
              REPLAY,
              `/v1/webhooks/${ids.webhook}/replay`,
              { since: since.toISOString(), until: until.toISOString() },
              key ? { 'idempotency-key': key } : undefined,
            ),
            202,
          );
        }) as never,
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
      // The verifiable log: the latest checkpoint, proofs against signed checkpoints of records it holds,
      // stored tiles, and the public verifier key (with or without an API key).
      await check(
        fc.asyncProperty(fc.constant(0), async () => {
          expect(await currentSize()).toBeGreaterThanOrEqual(1);
        }) as never,
      );
      let fresh = 0;
      await check(
        fc.asyncProperty(fc.nat(), fc.option(fc.nat()), fc.boolean(), async (pick, sizePick, justLogged) => {
          if (justLogged) {
            // A record just logged: proved, or the documented 409 with Retry-After until it is sequenced.
            const scored = await post(SCORE, '/v1/scoring/score', {
              subject: `fresh-${fresh++}`,
              context: { jurisdiction: 'DE' },
            });
            const cid = (scored.body as { log_cid: string }).log_cid;
            const answer = await get(INCLUSION, `/v1/log/proofs/inclusion/${cid}`);
            if (answer.status !== 200) expectNotSequenced(answer);
            return;
          }
          const record = log.records[pick % log.records.length] as { cid: string; leaf: number };
          const sizes = signedSizes().filter((size) => size > record.leaf);
          const size = sizePick === null ? undefined : sizes[sizePick % sizes.length];
          const query = size === undefined ? '' : `?tree_size=${size}`;
          const answer = await get(INCLUSION, `/v1/log/proofs/inclusion/${record.cid}${query}`);
          expect(answer.status, JSON.stringify(answer.body).slice(0, 300)).toBe(200);
          expect(answer.body).toMatchObject({ log_cid: record.cid, leaf_index: record.leaf });
          if (size !== undefined) expect(answer.body).toMatchObject({ tree_size: size });
        }) as never,
      );
      await check(
        fc.asyncProperty(fc.nat(), fc.nat(), fc.boolean(), async (fromPick, toPick, latest) => {
          const sizes = signedSizes();
          const to = latest ? await currentSize() : (sizes[toPick % sizes.length] as number);
          const older = sizes.filter((size) => size <= to);
          const from = older[fromPick % older.length] as number;
          const answer = await get(CONSISTENCY, `/v1/log/proofs/consistency?from=${from}&to=${to}`);
          expect(answer.status, JSON.stringify(answer.body).slice(0, 300)).toBe(200);
          expect(answer.body).toMatchObject({ from_size: from, to_size: to });
        }) as never,
      );
      await check(
        fc.asyncProperty(fc.nat(), fc.nat(), fc.option(fc.nat()), async (sizePick, indexPick, widthPick) => {
          // Level 0 of a signed tree of `size` leaves: full tiles, then a partial one of size mod 256.
          const sizes = signedSizes();
          const size = sizes[sizePick % sizes.length] as number;
          const last = Math.floor((size - 1) / 256);
          const index = indexPick % (last + 1);
          const stored = index < last ? 256 : ((size - 1) % 256) + 1;
          const width = widthPick === null ? undefined : (widthPick % stored) + 1;
          const answer = await get(
            TILE,
            `/v1/log/tiles/0/${index}${width === undefined ? '' : `?width=${width}`}`,
          );
          expect(answer.status, JSON.stringify(answer.body).slice(0, 300)).toBe(200);
          expect(answer.body).toMatchObject({ level: 0, index, ...(width !== undefined && { width }) });
          expect((answer.body as { width: number }).width).toBeGreaterThanOrEqual(width ?? stored);
        }) as never,
      );
      await check(
        fc.asyncProperty(fc.boolean(), async (anonymous) => {
          const answer = await send({
            operation: VERIFIER_KEY,
            url: '/log/verifier-key',
            method: 'GET',
            anonymous,
          });
          expect(answer.status).toBe(200);
        }) as never,
      );
      // The root log: its latest checkpoint (public), consistency between sizes it served, the tenant's
      // checkpoint in it, and a record's proof file (200, or the documented 409 until the root holds it).
      await check(
        fc.asyncProperty(fc.boolean(), async (anonymous) => {
          const answer = await send({
            operation: ROOT_CHECKPOINT,
            url: '/log/root/checkpoint',
            method: 'GET',
            anonymous,
          });
          expect(answer.status, JSON.stringify(answer.body).slice(0, 300)).toBe(200);
          rootSizes.add((answer.body as { tree_size: number }).tree_size);
        }) as never,
      );
      await currentRootSize();
      await check(
        fc.asyncProperty(fc.nat(), fc.nat(), async (fromPick, toPick) => {
          const sizes = [...rootSizes].sort((a, b) => a - b);
          const to = sizes[toPick % sizes.length] as number;
          const older = sizes.filter((size) => size <= to);
          const from = older[fromPick % older.length] as number;
          const answer = await get(ROOT_CONSISTENCY, `/log/root/proofs/consistency?from=${from}&to=${to}`);
          expect(answer.status, JSON.stringify(answer.body).slice(0, 300)).toBe(200);
        }) as never,
      );
      await check(
        fc.asyncProperty(fc.option(fc.nat()), async (sizePick) => {
          const sizes = signedSizes();
          const size = sizePick === null ? undefined : sizes[sizePick % sizes.length];
          const answer = await get(
            ROOT_INCLUSION,
            `/v1/log/root/proofs/inclusion${size === undefined ? '' : `?tree_size=${size}`}`,
          );
          expect([200, 404, 409], JSON.stringify(answer.body).slice(0, 300)).toContain(answer.status);
        }) as never,
      );
      await check(
        fc.asyncProperty(fc.nat(), async (pick) => {
          const record = log.records[pick % log.records.length] as { cid: string };
          const answer = await get(PROOF_FILE, `/v1/logs/${record.cid}/proof-file`);
          expect([200, 409], JSON.stringify(answer.body).slice(0, 300)).toContain(answer.status);
        }) as never,
      );
      // The probes take no input: a few requests each, with or without a key, must answer 200.
      for (const path of ['/healthz', '/readyz'] as const) {
        for (let i = 0; i < 5; i++) await expectStatus(get(op('get', path), path), 200);
      }
    }, 600_000);

    // --- Invalid and hostile requests: a documented 4xx, never a 5xx.
    it('refuses every invalid or hostile request with a documented 4xx', async () => {
      target.phase = 'invalid';
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
        [ERASE, '/v1/erasures', 'POST', bodies.erasure],
        [SUBJECT_RECORDS, '/v1/subjects/records', 'POST', bodies.subjectRecords],
        [
          REPLAY,
          `/v1/webhooks/${ids.webhook}/replay`,
          'POST',
          fc.constant({
            since: new Date(Date.now() - 3_600_000).toISOString(),
            until: new Date().toISOString(),
          }),
        ],
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
      await refusedGet(NOTICE, (s) => `/v1/logs/${s}/notice`);
      await refusedGet(MODEL, (s) => `/v1/scoring/models/${s}`);
      await refusedGet(ERASURE, (s) => `/v1/erasures/${s}`);
      await refusedGet(ERASED_CIDS, (s) => `/v1/erasures/${s}/log-cids`);
      const unknownKey = await send({
        operation: MODELS,
        url: MODELS.path,
        method: 'GET',
        headers: { authorization: 'Bearer sk_not_a_key' },
      });
      expect(unknownKey.status).toBe(401);
      await refusedGet(WEBHOOK, (s) => `/v1/webhooks/${s}`);
      await refusedGet(DELETE, (s) => `/v1/webhooks/${s}`);
      await refusedGet(TEST, (s) => `/v1/webhooks/${s}/test`);
      await refusedGet(DELIVERIES, (s) => `/v1/webhooks/${s}/deliveries`);
      await refusedGet(ATTEMPTS, (s) => `/v1/webhooks/${ids.webhook}/deliveries/${s}/attempts`);
      await refusedGet(REDELIVER, (s) => `/v1/webhooks/${ids.webhook}/deliveries/${s}/redeliver`);
      await refusedGet(INCLUSION, (s) => `/v1/log/proofs/inclusion/${s}`);
      await invalidLog();
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

    /** The verifiable log's numbers at their edges and beyond, and its input-less operations with hostile headers. */
    const invalidLog = async () => {
      const expectStatus = (answer: FuzzAnswer, ...statuses: number[]): void => {
        expect(statuses, `${answer.status} ${JSON.stringify(answer.body).slice(0, 300)}`).toContain(
          answer.status,
        );
      };
      // An unknown but well-formed CID is no record of this tenant.
      await check(
        fc.asyncProperty(fc.stringMatching(/^bafkrei[a-z2-7]{52}$/), async (cid) => {
          expectStatus(await get(INCLUSION, `/v1/log/proofs/inclusion/${cid}`), 404);
        }) as never,
      );
      const size = await currentSize();
      /** A tree size at an edge, and the statuses a proof against it may answer for a record of leaf `leaf`. */
      const edge = fc.constantFrom('0', '1', 'current', 'next', MAX_SAFE, TWO_POW_53, '-1', '0x10', '');
      const edgeValue = (value: string) =>
        value === 'current' ? String(size) : value === 'next' ? String(size + 1) : value;
      const validSize = (value: string) =>
        /^[1-9]\d*$/.test(value) && Number(value) <= Number.MAX_SAFE_INTEGER;
      const inclusionStatuses = (value: string, leaf: number) => {
        if (!validSize(value)) return [400];
        const n = Number(value);
        // A size not seen signed may have been signed since: only the sizes seen have one answer.
        if (log.sizes.has(n)) return [n > leaf ? 200 : 422];
        return n > Number.MAX_SAFE_INTEGER / 2 ? [404] : [200, 404, 422];
      };
      await check(
        fc.asyncProperty(
          fc.nat(),
          fc.oneof(edge.map(edgeValue), badInteger(1, Number.MAX_SAFE_INTEGER)),
          async (pick, value) => {
            const record = log.records[pick % log.records.length] as { cid: string; leaf: number };
            const answer = await get(
              INCLUSION,
              `/v1/log/proofs/inclusion/${record.cid}?tree_size=${encodeURIComponent(value)}`,
            );
            expectStatus(answer, ...inclusionStatuses(value, record.leaf));
          },
        ) as never,
      );
      const sizeOrBad = fc.oneof(edge.map(edgeValue), badInteger(1, Number.MAX_SAFE_INTEGER));
      await check(
        fc.asyncProperty(fc.option(sizeOrBad), fc.option(sizeOrBad), async (from, to) => {
          const query = [
            ...(from === null ? [] : [`from=${encodeURIComponent(from)}`]),
            ...(to === null ? [] : [`to=${encodeURIComponent(to)}`]),
          ].join('&');
          const answer = await get(CONSISTENCY, `/v1/log/proofs/consistency?${query}`);
          if (from === null || to === null || !validSize(from) || !validSize(to)) expectStatus(answer, 400);
          else if (Number(from) > Number(to)) expectStatus(answer, 422);
          else if (log.sizes.has(Number(from)) && log.sizes.has(Number(to))) expectStatus(answer, 200);
          else expectStatus(answer, 200, 404);
        }) as never,
      );
      // Tiles: a bad level, index or width is 400; a tile or width not stored (yet) is 404.
      const tileCase = fc.oneof(
        badInteger(0, 7).map((level) => ({ level: inPath(level), index: '0', width: null, status: 400 })),
        badInteger(0, Number.MAX_SAFE_INTEGER).map((index) => ({
          level: '0',
          index: inPath(index),
          width: null,
          status: 400,
        })),
        badInteger(1, 256).map((width) => ({ level: '0', index: '0', width, status: 400 })),
        fc.constantFrom(
          { level: '7', index: '0', width: null, status: 404 },
          { level: '0', index: MAX_SAFE, width: null, status: 404 },
          { level: '0', index: TWO_POW_53, width: null, status: 400 },
          { level: '8', index: '0', width: null, status: 400 },
          { level: '0', index: '0', width: '257', status: 400 },
          { level: '0', index: '0', width: '0', status: 400 },
        ),
      );
      await check(
        fc.asyncProperty(tileCase, async ({ level, index, width, status }) => {
          const query = width === null ? '' : `?width=${encodeURIComponent(width)}`;
          expectStatus(await get(TILE, `/v1/log/tiles/${level}/${index}${query}`), status);
        }) as never,
      );
      // A width wider than the tree is not stored yet: 404 (the tree is far below 256 leaves here).
      if (size < 255) expectStatus(await get(TILE, `/v1/log/tiles/0/0?width=${size + 1}`), 404);

      // The root log's numbers at their edges, an unknown record's proof file, a malformed CID.
      const rootSize = await currentRootSize();
      const rootEdge = fc.constantFrom('0', '1', 'current', 'next', MAX_SAFE, TWO_POW_53, '-1', '0x10', '');
      const rootValue = (value: string) =>
        value === 'current' ? String(rootSize) : value === 'next' ? String(rootSize + 1) : value;
      const rootSizeOrBad = fc.oneof(rootEdge.map(rootValue), badInteger(1, Number.MAX_SAFE_INTEGER));
      await check(
        fc.asyncProperty(fc.option(rootSizeOrBad), fc.option(rootSizeOrBad), async (from, to) => {
          const query = [
            ...(from === null ? [] : [`from=${encodeURIComponent(from)}`]),
            ...(to === null ? [] : [`to=${encodeURIComponent(to)}`]),
          ].join('&');
          const answer = await get(ROOT_CONSISTENCY, `/log/root/proofs/consistency?${query}`);
          if (from === null || to === null || !validSize(from) || !validSize(to)) expectStatus(answer, 400);
          else if (Number(from) > Number(to)) expectStatus(answer, 422);
          else expectStatus(answer, 200, 404);
        }) as never,
      );
      await check(
        fc.asyncProperty(
          fc.oneof(edge.map(edgeValue), badInteger(1, Number.MAX_SAFE_INTEGER)),
          async (value) => {
            const answer = await get(
              ROOT_INCLUSION,
              `/v1/log/root/proofs/inclusion?tree_size=${encodeURIComponent(value)}`,
            );
            if (!validSize(value)) expectStatus(answer, 400);
            else expectStatus(answer, 200, 404, 409);
          },
        ) as never,
      );
      await check(
        fc.asyncProperty(
          fc.oneof(
            fc.stringMatching(/^bafkrei[a-z2-7]{52}$/).map((cid) => ({ cid, statuses: [404] })),
            fc.constantFrom('bafk', 'x'.repeat(300), 'BAFKREI', '%00', '..').map((cid) => ({
              cid: encodeURIComponent(cid),
              statuses: [400, 404],
            })),
          ),
          async ({ cid, statuses }) => {
            expectStatus(await get(PROOF_FILE, `/v1/logs/${cid}/proof-file`), ...statuses);
          },
        ) as never,
      );
      expectStatus(await get(ROOT_CHECKPOINT, '/log/root/checkpoint?tree_size=1'), 400);

      // Input-less operations: hostile request ids (the server makes its own), unknown query parameters,
      // and a checkpoint asked without a key or with a wrong one.
      const requestId = fc.constantFrom(
        'x'.repeat(2000),
        '',
        ' ',
        '\u00ff\u00e9',
        '<script>',
        '../..',
        'a,b;c',
      );
      const inputless = [CHECKPOINT, VERIFIER_KEY, op('get', '/healthz'), op('get', '/readyz')];
      await check(
        fc.asyncProperty(fc.constantFrom(...inputless), requestId, async (operation, id) => {
          const answer = await send({
            operation,
            url: operation.path,
            method: 'GET',
            headers: { 'x-request-id': id },
          });
          // An id the server does not echo is replaced by its own, whatever its length.
          expectStatus(answer, 200);
          expect(answer.headers.get('x-request-id')).toMatch(/^[A-Za-z0-9._:-]{1,128}$/);
        }) as never,
      );
      for (const operation of inputless) {
        expectStatus(await get(operation, `${operation.path}?tree_size=1`), 400);
      }
      expectStatus(
        await send({ operation: CHECKPOINT, url: CHECKPOINT.path, method: 'GET', anonymous: true }),
        401,
      );
      expectStatus(
        await send({
          operation: CHECKPOINT,
          url: CHECKPOINT.path,
          method: 'GET',
          headers: { authorization: 'Bearer sk_not_a_key' },
        }),
        401,
      );
    };

    // --- Every operation of the bundled contract, sent valid and invalid requests by this suite.
    it('exercises every operation of the contract with valid and invalid requests', () => {
      const operations = contractOperations(bundle as unknown as OpenApiDocument).map(
        (operation) => `${operation.method} ${operation.path}`,
      );
      expect(operations.length).toBeGreaterThan(20);
      for (const phase of ['valid', 'invalid'] as const) {
        const missing = operations.filter((operation) => !target.exercised[phase].has(operation));
        expect(missing, `operations the ${phase} fuzzing never sent a request to`).toEqual([]);
      }
    });

    // --- Stateful chains over one webhook's life.
    it('keeps every chain create → read → test → deliveries → attempts → redeliver → rotate → patch → delete → read consistent', async () => {
      target.phase = 'chain';
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
