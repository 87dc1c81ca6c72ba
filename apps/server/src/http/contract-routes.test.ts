import { describe, expect, it } from 'vitest';
import { loadContract } from '../common/contract.js';
import { allowedMethodsLookup, contractOperations } from './contract-routes.js';

const operations = contractOperations(loadContract().document);

describe('contractOperations', () => {
  it('lists every operation of the contract with its Express path', () => {
    const score = operations.find((o) => o.operationId === 'scoreSubject');
    expect(score).toMatchObject({
      method: 'post',
      path: '/v1/scoring/score',
      expressPath: '/v1/scoring/score',
    });
    const attempts = operations.find((o) => o.operationId === 'listDeliveryAttempts');
    expect(attempts?.expressPath).toBe('/v1/webhooks/:id/deliveries/:delivery_id/attempts');
    expect(new Set(operations.map((o) => o.operationId)).size).toBe(operations.length);
  });
});

describe('allowedMethodsLookup', () => {
  const allowed = allowedMethodsLookup(operations);

  it('gives the methods of the path a concrete path matches', () => {
    expect(allowed('/v1/scoring/score')).toEqual(['POST']);
    expect(allowed('/v1/webhooks/wh_01JZ4VD5E7F9G1H3J5K7M9N1P3')).toEqual(['GET', 'HEAD', 'DELETE', 'PATCH']);
    expect(allowed('/v1/logs/anything')).toEqual(['GET', 'HEAD']);
  });

  it('gives nothing for a path the contract does not have', () => {
    expect(allowed('/v1/logs')).toBeUndefined();
    expect(allowed('/v1/logs/a/b')).toBeUndefined();
    expect(allowed('/v2/scoring/score')).toBeUndefined();
  });
});
