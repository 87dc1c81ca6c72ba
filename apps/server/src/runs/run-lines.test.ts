import type { Problem } from '@scenario-scoring/api-types';
import { describe, expect, it } from 'vitest';
import { loadContract } from '../common/contract.js';
import { lineReader } from './run-lines.js';

const read = lineReader(loadContract().document, 'default');
const line = (value: unknown) => Buffer.from(JSON.stringify(value));
const problemOf = (error: string | null) => JSON.parse(error as string) as Problem;

describe('an NDJSON line with members the contract does not define', () => {
  it('fails past a hundred of them before the validator: all counted, the first hundred listed, its subject kept', () => {
    const context: Record<string, unknown> = { jurisdiction: 'DE' };
    for (let i = 0; i < 6500; i++) context[`k${i}`] = 1;
    const read3 = read(line({ subject: 's', context }), 3);
    expect(read3).toMatchObject({ subject: 's', item: null });
    const problem = problemOf(read3.error);
    expect(problem.code).toBe('validation_failed');
    expect(problem.detail).toMatch(
      /^Line 3 is not a valid item\. The request has 6500 invalid fields: \/line\/3\/context\/k0 must NOT have additional properties;/,
    );
    expect(problem.errors).toHaveLength(100);
  });

  it('fails with every error of the validator when there are a hundred or fewer', () => {
    const read1 = read(
      line({ subject: 's', context: { jurisdiction: 'DE', utilisation: 0.3, on_time_ratio: 'x' } }),
      1,
    );
    const problem = problemOf(read1.error);
    expect(problem.detail).toMatch(/^Line 1 is not a valid item\. The request has 2 invalid fields/);
    expect(problem.errors).toEqual(
      expect.arrayContaining([
        // As a JSON run's /body/items/0/context/utilisation: the path names the member.
        { path: '/line/1/context/utilisation', message: 'must NOT have additional properties' },
        expect.objectContaining({ path: '/line/1/context/on_time_ratio' }),
      ]),
    );
  });

  it('fails nested deeper than 32 levels before it is parsed', () => {
    const deep = Buffer.from(
      `{"subject":"s","context":{"jurisdiction":${'['.repeat(30_000)}1${']'.repeat(30_000)}}}`,
    );
    const problem = problemOf(read(deep, 7).error);
    expect(problem.code).toBe('validation_failed');
    expect(problem.errors).toEqual([{ path: '/line/7', message: 'must not nest deeper than 32 levels' }]);
  });

  it('is an item when valid', () => {
    const item = { subject: 's', context: { jurisdiction: 'DE', utilization: 0.3 } };
    expect(read(line(item), 1)).toEqual({ subject: 's', item: JSON.stringify(item), error: null });
  });
});
