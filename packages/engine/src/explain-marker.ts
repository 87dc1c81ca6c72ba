import type { FactorName } from './factor-table.js';

/** The five explain markers, from strongly negative to strongly positive. */
export type ExplainMarker = '⇊' | '↓' | '≈' | '↑' | '⇈';

/** How many factors a scenario's explain lists at most. */
export const EXPLAIN_SIZE = 4;

/** The marker for an attribution, at the thresholds of scoring-model.md (both ±75 and ±15 are inclusive outward). */
export function explainMarker(attribution: number): ExplainMarker {
  if (attribution <= -75) return '⇊';
  if (attribution <= -15) return '↓';
  if (attribution < 15) return '≈';
  if (attribution < 75) return '↑';
  return '⇈';
}

/** A factor's attribution in one scenario. */
export interface Attribution {
  name: FactorName;
  value: number;
}

/**
 * The explain entries of one scenario: the four largest |attribution|, largest first. Ordering by name on
 * ties makes the choice (and the output) deterministic when two factors contribute equally.
 */
export function explainEntries(attributions: readonly Attribution[]): string[] {
  return [...attributions]
    .sort((a, b) => Math.abs(b.value) - Math.abs(a.value) || compareNames(a.name, b.name))
    .slice(0, EXPLAIN_SIZE)
    .map((a) => `factor:${a.name}${explainMarker(a.value)}`);
}

/** Code-unit order, not locale order, so the result is the same on every machine. */
function compareNames(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
