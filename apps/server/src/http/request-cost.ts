import type { OperationId } from '@scenario-scoring/api-types';

/**
 * What an operation costs in the per-key rate limit, in requests, when not 1: the verifiable log's reads
 * that cost the server more than a scoring. A proof on a 300,000-leaf tree took 2.5–3 scorings' CPU; a
 * tile reads and sends up to 256 hashes. Documented in docs/security.md.
 */
export const REQUEST_COSTS: Readonly<Partial<Record<OperationId, number>>> = {
  getInclusionProof: 3,
  getConsistencyProof: 3,
  getLogTile: 2,
  getLogCheckpoint: 1,
};

/** The cost of a request to `operationId`, at most the whole budget (`perSecond`) so it can ever pass. */
export function requestCost(operationId: string | undefined, perSecond: number): number {
  const cost = (operationId !== undefined && REQUEST_COSTS[operationId as OperationId]) || 1;
  return Math.min(cost, Math.max(1, Math.floor(perSecond)));
}

/** Said in a 429's detail when the refused request counted as more than one. */
export function costNote(cost: number): string {
  return cost > 1 ? ` (this operation counts as ${cost})` : '';
}
