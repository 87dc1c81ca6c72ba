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
  unknownMembers,
} from './unknown-members.js';

const { document } = loadContract();
const operations = contractOperations(document);
const shapes = requestBodyShapes(operations, document);

/** A 1,000-item run whose every context has `extra` members the contract does not define. */
function runWithUnknownMembers(extra: number) {
  return {
    items: Array.from({ length: 1000 }, (_, n) => {
      const context: Record<string, unknown> = { jurisdiction: 'DE' };
      for (let i = 0; i < extra; i++) context[`k${i}`] = i;
      return { subject: `s${n}`, context };
    }),
  };
}

describe('the request body shapes read from the contract', () => {
  it('name every member of the scoring and run bodies, down to the context', () => {
    const score = shapes.get('scoreSubject') as BodyShape;
    expect([...(score.members?.keys() ?? [])].sort()).toEqual(['context', 'subject']);
    expect(score.members?.get('context')?.members?.has('on_time_ratio')).toBe(true);
    const item = shapes.get('createRun')?.members?.get('items')?.items as BodyShape;
    expect([...(item.members?.keys() ?? [])].sort()).toEqual(['context', 'subject']);
    expect(item.members?.get('context')?.members?.has('jurisdiction')).toBe(true);
  });

  it('find no unknown member in any operation’s own request example', () => {
    const withBodies = operations.filter((operation) => shapes.has(operation.operationId));
    expect(withBodies.length).toBeGreaterThanOrEqual(8);
    for (const operation of withBodies) {
      const { body } = requestExample(operation, document);
      expect(
        unknownMembers(body, shapes.get(operation.operationId) as BodyShape),
        operation.operationId,
      ).toEqual({ count: 0, listed: [] });
    }
  });

  it('count every unknown member, list the first hundred with their JSON Pointer, and never walk into one', () => {
    const body = runWithUnknownMembers(3) as Record<string, unknown>;
    body['a/b~c'] = { deep: { deeper: 1 } };
    const found = unknownMembers(body, shapes.get('createRun') as BodyShape);
    expect(found.count).toBe(3001);
    expect(found.listed).toHaveLength(100);
    expect(found.listed[0]).toEqual({
      path: '/body/items/0/context/k0',
      message: 'must NOT have additional properties',
    });
    expect(found.listed[3]?.path).toBe('/body/items/1/context/k0');
    expect(unknownMembers({ 'a/b~c': { deep: 1 } }, shapes.get('createRun') as BodyShape).listed).toEqual([
      { path: '/body/a~1b~0c', message: 'must NOT have additional properties' },
    ]);
  });
});

describe('refuseUnknownMembers', () => {
  /** Runs the middleware on a parsed run body whose parser counted `members` members. */
  const run = (body: unknown, members: number) => {
    const next = vi.fn();
    const middleware = refuseUnknownMembers(shapes, () => members);
    const res = { locals: { operationId: 'createRun' } } as unknown as Response;
    try {
      middleware({ body } as Request, res, next);
      return { next, thrown: undefined };
    } catch (error) {
      return { next, thrown: error };
    }
  };

  it('throws validation_failed without calling the validator (next) when there are more than a hundred', () => {
    const { next, thrown } = run(runWithUnknownMembers(60), 63_001);
    expect(next).not.toHaveBeenCalled();
    expect(thrown).toBeInstanceOf(AppError);
    expect((thrown as AppError).code).toBe('validation_failed');
    expect((thrown as AppError).errors).toHaveLength(100);
  });

  it('leaves to the validator a body with a hundred members or fewer, without walking it', () => {
    const { next, thrown } = run(runWithUnknownMembers(60), 100);
    expect(thrown).toBeUndefined();
    expect(next).toHaveBeenCalledOnce();
  });
});

// Through the server: the answer a client gets, and the validator's own answer when there are few.
forEachDatabase('bodies with members the contract does not define', ({ storage }) => {
  let server: TestServer;
  let key: string;
  beforeAll(async () => {
    server = await startTestServer({ storage: storage() });
    ({ key } = await testFeatures(storage()).keys.create('unknown-members'));
  });
  afterAll(() => server.close());

  it('when a run holds 60,000 of them, then it is refused 400 validation_failed counting them all and naming the first hundred, before the validator', async () => {
    const response = await server.request('/v1/scoring/runs', { key, body: runWithUnknownMembers(60) });
    expect(response.status).toBe(400);
    const problem = (await response.json()) as Problem;
    expect(problem.code).toBe('validation_failed');
    expect(problem.detail).toMatch(
      /^The request has 60000 invalid fields: \/body\/items\/0\/context\/k0 must NOT have additional properties;/,
    );
    expect(problem.errors).toHaveLength(100);
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
