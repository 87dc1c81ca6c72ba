import type { Problem } from '@scenario-scoring/api-types';
import type { Request, Response } from 'express';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { forEachDatabase } from '../../test/support/test-databases.js';
import { testFeatures } from '../../test/support/test-features.js';
import { startTestServer, type TestServer } from '../../test/support/test-server.js';
import { loadContract } from '../common/contract.js';
import { AppError } from '../errors/app-error.js';
import { requestExample } from './contract-examples.js';
import { contractOperations } from './contract-routes.js';
import {
  type BodyShape,
  refuseUnknownMembers,
  requestBodyShapes,
  shapeViolations,
} from './unknown-members.js';

const { document } = loadContract();
const operations = contractOperations(document);
const shapes = requestBodyShapes(operations, document);
const runShape = shapes.get('createRun') as BodyShape;

/** A run of `count` items whose every context has `extra` members the contract does not define. */
function runWithUnknownMembers(extra: number, count = 1000) {
  return {
    items: Array.from({ length: count }, (_, n) => {
      const context: Record<string, unknown> = { jurisdiction: 'DE' };
      for (let i = 0; i < extra; i++) context[`k${i}`] = i;
      return { subject: `s${n}`, context };
    }),
  };
}

describe('the request body shapes read from the contract', () => {
  it('name every member of the scoring and run bodies, down to the context, and the bound on a run’s items', () => {
    const score = shapes.get('scoreSubject') as BodyShape;
    expect([...(score.members?.keys() ?? [])].sort()).toEqual(['context', 'subject']);
    expect(score.members?.get('context')?.members?.has('on_time_ratio')).toBe(true);
    const items = runShape.members?.get('items') as BodyShape;
    expect(items.maxItems).toBe(1000);
    const item = items.items as BodyShape;
    expect([...(item.members?.keys() ?? [])].sort()).toEqual(['context', 'subject']);
    expect(item.members?.get('context')?.members?.has('jurisdiction')).toBe(true);
    expect(shapes.get('registerWebhook')?.members?.get('events')?.maxItems).toBeGreaterThan(0);
  });

  it('find nothing wrong in any operation’s own request example', () => {
    const withBodies = operations.filter((operation) => shapes.has(operation.operationId));
    expect(withBodies.length).toBeGreaterThanOrEqual(8);
    for (const operation of withBodies) {
      const { body } = requestExample(operation, document);
      expect(
        shapeViolations(body, shapes.get(operation.operationId) as BodyShape),
        operation.operationId,
      ).toEqual({ unknownCount: 0, unknown: [] });
    }
  });

  it('count every unknown member, list the first hundred where they are, and never walk into one', () => {
    const body = runWithUnknownMembers(3) as Record<string, unknown>;
    body['a/b~c'] = { deep: { deeper: 1 } };
    const found = shapeViolations(body, runShape);
    expect(found.unknownCount).toBe(3001);
    expect(found.unknown).toHaveLength(100);
    expect(found.unknown[0]).toEqual({ at: '/items/0/context', name: 'k0' });
    expect(found.unknown[3]).toEqual({ at: '/items/1/context', name: 'k0' });
    expect(shapeViolations({ 'a/b~c': { deep: 1 } }, runShape).unknown).toEqual([{ at: '', name: 'a/b~c' }]);
  });

  it('stop at an array longer than its maxItems, without walking its items', () => {
    const found = shapeViolations({ items: Array(5000).fill({ unknown: 1 }) }, runShape);
    expect(found).toEqual({ unknownCount: 0, unknown: [], tooLong: { at: '/items', maxItems: 1000 } });
  });
});

describe('refuseUnknownMembers', () => {
  const middleware = refuseUnknownMembers(shapes);
  /** Runs the middleware on a parsed run body. */
  const run = (body: unknown) => {
    const next = vi.fn();
    const res = { locals: { operationId: 'createRun' } } as unknown as Response;
    try {
      middleware({ body } as Request, res, next);
      return { next, thrown: undefined };
    } catch (error) {
      return { next, thrown: error as AppError };
    }
  };

  it('throws validation_failed without calling the validator (next) past a hundred unknown members', () => {
    const { next, thrown } = run(runWithUnknownMembers(60));
    expect(next).not.toHaveBeenCalled();
    expect(thrown).toBeInstanceOf(AppError);
    expect(thrown?.code).toBe('validation_failed');
    expect(thrown?.errors).toHaveLength(100);
    expect(thrown?.detail).toMatch(
      /^The request has 60000 invalid fields: \/body\/items\/0\/context\/k0 must NOT/,
    );
  });

  it('throws one error without calling the validator for a run of more than 1,000 items, whatever they are', () => {
    const { next, thrown } = run({ items: Array(524_280).fill(1) });
    expect(next).not.toHaveBeenCalled();
    expect(thrown?.errors).toEqual([{ path: '/body/items', message: 'must NOT have more than 1000 items' }]);
  });

  it('leaves to the validator a body within both bounds, which lists every error it has', () => {
    expect(run(runWithUnknownMembers(0)).next).toHaveBeenCalledOnce();
    const few = runWithUnknownMembers(0);
    (few.items[0] as { context: Record<string, unknown> }).context.k = 1;
    expect(run(few).next).toHaveBeenCalledOnce();
  });
});

// Through the server: the answer a client gets, and the validator's own answer when there are few.
forEachDatabase('bodies with members the contract does not define, or too many items', ({ storage }) => {
  let server: TestServer;
  let key: string;
  beforeAll(async () => {
    server = await startTestServer({ storage: storage() });
    ({ key } = await testFeatures(storage()).keys.create('unknown-members'));
  });
  afterAll(() => server.close());

  it('when a run holds 60,000 of them, then it is refused 400 validation_failed counting them all and naming the first hundred', async () => {
    const response = await server.request('/v1/scoring/runs', { key, body: runWithUnknownMembers(60) });
    expect(response.status).toBe(400);
    const problem = (await response.json()) as Problem;
    expect(problem.code).toBe('validation_failed');
    expect(problem.detail).toMatch(
      /^The request has 60000 invalid fields: \/body\/items\/0\/context\/k0 must NOT have additional properties;/,
    );
    expect(problem.errors).toHaveLength(100);
  });

  it('when a run has 64,000 items, then it is refused 400 with the one error of its bound', async () => {
    const response = await server.request('/v1/scoring/runs', {
      key,
      body: { items: Array(64_000).fill(1) },
    });
    expect(response.status).toBe(400);
    expect(((await response.json()) as Problem).errors).toEqual([
      { path: '/body/items', message: 'must NOT have more than 1000 items' },
    ]);
  });

  it('names a member with "/" or "~" in it, or an empty name, by the same JSON Pointer whoever refuses it', async () => {
    const paths = async (context: Record<string, unknown>) => {
      const response = await server.request('/v1/scoring/score', {
        key,
        body: { subject: 's', context: { jurisdiction: 'DE', ...context } },
      });
      return ((await response.json()) as Problem).errors?.map((error) => error.path);
    };
    // The validator (one unknown member), then the guard (more than a hundred).
    expect(await paths({ 'a/b~c': 1, '': 2 })).toEqual(['/body/context/a~1b~0c', '/body/context/']);
    const many: Record<string, unknown> = { 'a/b~c': 1, '': 2 };
    for (let i = 0; i < 100; i++) many[`k${i}`] = i;
    expect((await paths(many))?.slice(0, 2)).toEqual(['/body/context/a~1b~0c', '/body/context/']);
  });

  it('when there are a hundred or fewer, then the validator answers, listing them with every other error', async () => {
    const body = runWithUnknownMembers(0);
    const first = body.items[0] as { context: Record<string, unknown> };
    for (let i = 0; i < 50; i++) first.context[`k${i}`] = i;
    first.context.on_time_ratio = 'high';
    const response = await server.request('/v1/scoring/runs', { key, body });
    expect(response.status).toBe(400);
    const problem = (await response.json()) as Problem;
    expect(problem.detail).toMatch(/^The request has 51 invalid fields/);
    expect(problem.errors?.map((error) => error.path)).toContain('/body/items/0/context/on_time_ratio');
  });
});
