import { describe, expect, it } from 'vitest';
import { nodeVersionProblem } from './node-version.js';

describe('the Node version check', () => {
  it('accepts Node 24 and newer', () => {
    expect(nodeVersionProblem('v24.0.0')).toBeUndefined();
    expect(nodeVersionProblem('v25.2.1')).toBeUndefined();
  });

  it('refuses an older Node, saying which is needed and how to get it', () => {
    const problem = nodeVersionProblem('v22.23.3');
    expect(problem).toContain('scenario-scoring needs Node 24 or newer; this is Node v22.23.3.');
    expect(problem).toContain('source scripts/node24.sh');
  });
});
