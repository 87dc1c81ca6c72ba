import { describe, expect, it } from 'vitest';
import { loadContract } from '../common/contract.js';
import { contractOperations } from './contract-routes.js';
import { operationLookup } from './operation-lookup.js';

describe('operationLookup', () => {
  const lookup = operationLookup(contractOperations(loadContract().document));

  it('finds the operationId of a path without parameters, and of one with them', () => {
    expect(lookup('POST', '/v1/scoring/score')).toBe('scoreSubject');
    expect(lookup('GET', '/v1/logs/bafkreiabc')).toBe('getLogRecord');
    expect(lookup('GET', '/v1/scoring/policies/DE')).toBe('getPolicy');
  });

  it('answers HEAD with the GET operation and ignores a trailing slash', () => {
    expect(lookup('HEAD', '/healthz')).toBe('getHealth');
    expect(lookup('GET', '/readyz/')).toBe('getReadiness');
    expect(lookup('GET', '/v1/logs/bafkreiabc/')).toBe('getLogRecord');
  });

  it('finds nothing for another method, a longer path or an unknown one', () => {
    expect(lookup('GET', '/v1/scoring/score')).toBeUndefined();
    expect(lookup('GET', '/v1/logs/a/b')).toBeUndefined();
    expect(lookup('GET', '/v1/logs/a//')).toBeUndefined();
    expect(lookup('GET', '/docs')).toBeUndefined();
  });
});
