import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { forEachDatabase } from '../../test/support/test-databases.js';
import { testFeatures } from '../../test/support/test-features.js';
import { startTestServer, type TestServer } from '../../test/support/test-server.js';
import { type Contract, loadContract } from '../common/contract.js';
import { contractOperations } from './contract-routes.js';
import { DeprecationContractError, deprecatedOperations } from './deprecation-headers.js';

/** The bundled contract with `getPolicy` deprecated: a test-only contract, as a real deprecation would be. */
function contractWithDeprecatedGetPolicy(marks: Record<string, unknown>): Contract {
  const contract = loadContract();
  const document = structuredClone(contract.document) as { paths: Record<string, Record<string, object>> };
  const item = document.paths['/v1/scoring/policies/{jurisdiction}'] as Record<string, object>;
  item.get = { ...item.get, deprecated: true, ...marks };
  return { ...contract, document };
}

describe('the deprecation headers of an operation', () => {
  const operations = (marks: Record<string, unknown>) =>
    contractOperations(contractWithDeprecatedGetPolicy(marks).document);

  it('are Deprecation (RFC 9745, @unix seconds), Sunset (RFC 8594, HTTP date) and a Link to the policy', () => {
    const headers = deprecatedOperations(
      operations({ 'x-deprecated-at': '2026-11-01', 'x-sunset': '2027-06-01' }),
    );
    expect([...headers.keys()]).toEqual(['getPolicy']);
    expect(headers.get('getPolicy')).toEqual({
      Deprecation: '@1793491200',
      Sunset: 'Tue, 01 Jun 2027 00:00:00 GMT',
      Link: '</docs>; rel="deprecation"; type="text/html"',
    });
  });

  it('are none for the contract as published (nothing is deprecated yet)', () => {
    expect(deprecatedOperations(contractOperations(loadContract().document)).size).toBe(0);
  });

  it('need the date of the deprecation, and a sunset after it', () => {
    expect(() => deprecatedOperations(operations({}))).toThrow(DeprecationContractError);
    expect(() =>
      deprecatedOperations(operations({ 'x-deprecated-at': '2026-11-01', 'x-sunset': '2026-10-01' })),
    ).toThrow('getPolicy: x-sunset is not after x-deprecated-at');
  });
});

forEachDatabase('a deprecated operation served', ({ storage }) => {
  let server: TestServer;
  let key: string;
  beforeAll(async () => {
    const contract = contractWithDeprecatedGetPolicy({
      'x-deprecated-at': '2026-11-01',
      'x-sunset': '2027-06-01',
    });
    server = await startTestServer({ storage: storage(), contract });
    ({ key } = await testFeatures(storage()).keys.create('deprecation'));
  });
  afterAll(() => server.close());

  it('answers with Deprecation, Sunset and Link, on success and on error alike', async () => {
    for (const [path, status] of [
      ['/v1/scoring/policies/DE', 200],
      ['/v1/scoring/policies/de', 400],
    ] as const) {
      const response = await server.request(path, { key });
      expect(response.status).toBe(status);
      expect(response.headers.get('deprecation')).toBe('@1793491200');
      expect(response.headers.get('sunset')).toBe('Tue, 01 Jun 2027 00:00:00 GMT');
      expect(response.headers.get('link')).toBe('</docs>; rel="deprecation"; type="text/html"');
    }
  });

  it('leaves the other operations without them', async () => {
    const response = await server.request('/v1/scoring/score', {
      key,
      body: { subject: 'a', context: { jurisdiction: 'DE' } },
    });
    expect(response.status).toBe(200);
    expect(response.headers.get('deprecation')).toBeNull();
    expect(response.headers.get('sunset')).toBeNull();
  });
});
