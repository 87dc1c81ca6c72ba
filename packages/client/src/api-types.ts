/**
 * The contract's types, copied from @scenario-scoring/api-types at build time (see
 * scripts/copy-api-types.mjs) so that this package's declarations need nothing unpublished.
 */
export type * from './generated/api-types/index.js';
