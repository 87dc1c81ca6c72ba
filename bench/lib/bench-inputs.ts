/** The scoring inputs the benches send, so the engine and the runs benches measure the same work. */
import type { ScoreContext } from '@scenario-scoring/engine';

/**
 * The context of item `i` in `jurisdiction`: one in ten thin (the jurisdiction only), the others full
 * files with plausible values that vary with `i`.
 */
export function benchContext(i: number, jurisdiction: string): ScoreContext {
  if (i % 10 === 0) return { jurisdiction };
  return {
    jurisdiction,
    on_time_ratio: 0.85 + (i % 16) / 100,
    utilization: (i % 10) / 20,
    history_months: 12 + (i % 229),
    debt_to_income: 0.05 + (i % 8) / 40,
    inquiries_12m: i % 6,
  };
}

/** The jurisdictions the runs, scale and score benches cycle through, item by item. */
const RUN_JURISDICTIONS = ['DE', 'US', 'US-CA', 'FR'];

/** The context of item `i` of the runs, scale and score benches: `benchContext` in the i-th jurisdiction of four. */
export function benchItemContext(i: number): ScoreContext {
  return benchContext(i, RUN_JURISDICTIONS[i % RUN_JURISDICTIONS.length] as string);
}
