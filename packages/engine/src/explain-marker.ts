import type { FactorName } from './factor-table.js';

/** The five explain markers, from strongly negative to strongly positive. */
export type ExplainMarker = '⇊' | '↓' | '≈' | '↑' | '⇈';

/** How many factors a scenario's explain lists at most. */
export const EXPLAIN_SIZE = 4;

/** The markers in order, from strongly negative to strongly positive. */
const MARKERS: readonly ExplainMarker[] = ['⇊', '↓', '≈', '↑', '⇈'];

/** The marker for an attribution, at the thresholds of scoring-model.md (both ±75 and ±15 are inclusive outward). */
export function explainMarker(attribution: number): ExplainMarker {
  return MARKERS[markerIndex(attribution)] as ExplainMarker;
}

/**
 * An attribution rounded to 6 decimal places (scorecard-2 ranks and marks on this value, so floating-point noise
 * such as 350·((0.9 − 0.8) / 0.2 − 0.5) = −3.9e-14 decides neither an order nor a marker). `Math.round(a·1e6)`
 * is an integer of millionths; dividing it by 1e6 keeps its order and meets the thresholds ±15, ±75 exactly.
 */
export function roundedAttribution(attribution: number): number {
  return Math.round(attribution * 1e6) / 1e6;
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
  return topAttributions(attributions, (a) => a.value).map((a) => entryText(a.name, a.value));
}

/** scorecard-2's explain entries: as `explainEntries`, on the attributions rounded to 6 decimal places. */
export function roundedExplainEntries(attributions: readonly Attribution[]): string[] {
  const rounded = attributions.map((a) => ({ name: a.name, value: roundedAttribution(a.value) }));
  return topAttributions(rounded, (a) => a.value).map((a) => entryText(a.name, a.value));
}

/**
 * The `EXPLAIN_SIZE` items with the largest |attributionOf|, largest first, ties by name ascending: an insertion
 * sort, because there are at most five factors and this runs three times per scoring.
 */
export function topAttributions<T extends { name: FactorName }>(
  items: readonly T[],
  attributionOf: (item: T) => number,
): T[] {
  const order: T[] = [];
  for (const item of items) {
    const magnitude = Math.abs(attributionOf(item));
    let j = order.length;
    order.push(item);
    while (j > 0) {
      const previous = order[j - 1] as T;
      const previousMagnitude = Math.abs(attributionOf(previous));
      const before =
        magnitude > previousMagnitude ||
        (magnitude === previousMagnitude && compareNames(item.name, previous.name) < 0);
      if (!before) break;
      order[j] = previous;
      j--;
    }
    order[j] = item;
  }
  if (order.length > EXPLAIN_SIZE) order.length = EXPLAIN_SIZE;
  return order;
}

/** Every `factor:<name><marker>` string, by name then by marker index, made once instead of once per entry. */
const ENTRY_TEXT = new Map<string, readonly string[]>();

/** The index in MARKERS of an attribution's marker. */
function markerIndex(attribution: number): number {
  if (attribution <= -75) return 0;
  if (attribution <= -15) return 1;
  if (attribution < 15) return 2;
  if (attribution < 75) return 3;
  return 4;
}

/** `factor:<name><marker>` for an attribution. */
export function entryText(name: FactorName, attribution: number): string {
  let byMarker = ENTRY_TEXT.get(name);
  if (byMarker === undefined) {
    byMarker = MARKERS.map((m) => `factor:${name}${m}`);
    ENTRY_TEXT.set(name, byMarker);
  }
  return byMarker[markerIndex(attribution)] as string;
}

/** Code-unit order, not locale order, so the result is the same on every machine. */
function compareNames(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
