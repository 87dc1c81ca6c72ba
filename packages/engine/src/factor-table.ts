/** A factor as it appears in explain entries, levers and policy weights. */
export type FactorName =
  | 'payment_history'
  | 'utilization'
  | 'history_length'
  | 'debt_to_income'
  | 'recent_inquiries';

/** An optional numeric input of a scoring context. */
export type ContextKey =
  | 'on_time_ratio'
  | 'utilization'
  | 'history_months'
  | 'debt_to_income'
  | 'inquiries_12m';

/** The way an input must move to improve the score: `+` increase, `-` decrease. */
export type LeverDirection = '+' | '-';

/** One row of the factor table (the same in every model version): how an input becomes a factor, and how it can be acted on. */
export interface FactorSpec {
  /** The context key the input is read from. */
  readonly key: ContextKey;
  /** The factor name used in explain, levers and policy weights. */
  readonly name: FactorName;
  /** The model's own weight; a policy may override it. */
  readonly weight: number;
  /** Maps an input value to its goodness x, already clamped to [0, 1]. */
  readonly goodness: (value: number) => number;
  /** Whether the subject can change the input (only actionable factors become levers). */
  readonly actionable: boolean;
  /** The direction a lever moves the input; null when not actionable. */
  readonly direction: LeverDirection | null;
  /** The absolute size of a lever's step, in input units; null when not actionable. */
  readonly step: number | null;
  /** The valid input range [min, max], inclusive; the contract declares the same bounds. */
  readonly range: readonly [number, number];
  /** Whether the input must be an integer. */
  readonly integer: boolean;
}

const clampUnit = (x: number): number => Math.min(1, Math.max(0, x));

/** The factor table, in the order of scoring-model.md. */
export const FACTORS: readonly FactorSpec[] = Object.freeze([
  {
    key: 'on_time_ratio',
    name: 'payment_history',
    weight: 350,
    goodness: (v: number) => clampUnit((v - 0.8) / 0.2),
    actionable: true,
    direction: '+',
    step: 0.02,
    range: [0, 1],
    integer: false,
  },
  {
    key: 'utilization',
    name: 'utilization',
    weight: 300,
    goodness: (v: number) => clampUnit(1 - v / 0.9),
    actionable: true,
    direction: '-',
    step: 0.09,
    range: [0, 10],
    integer: false,
  },
  {
    key: 'history_months',
    name: 'history_length',
    weight: 150,
    goodness: (v: number) => clampUnit(v / 120),
    actionable: false,
    direction: null,
    step: null,
    range: [0, 1200],
    integer: true,
  },
  {
    key: 'debt_to_income',
    name: 'debt_to_income',
    weight: 100,
    goodness: (v: number) => clampUnit(1 - v / 0.6),
    actionable: true,
    direction: '-',
    step: 0.06,
    range: [0, 10],
    integer: false,
  },
  {
    key: 'inquiries_12m',
    name: 'recent_inquiries',
    weight: 100,
    goodness: (v: number) => clampUnit(1 - v / 6),
    actionable: true,
    direction: '-',
    step: 1,
    range: [0, 100],
    integer: true,
  },
] satisfies FactorSpec[]);

/** The factor names in table order, for iterating weights. */
export const FACTOR_NAMES: readonly FactorName[] = Object.freeze(FACTORS.map((f) => f.name));

/** Whether a string names a factor. */
export function isFactorName(name: string): name is FactorName {
  return (FACTOR_NAMES as readonly string[]).includes(name);
}
