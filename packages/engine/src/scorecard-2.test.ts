import { describe, expect, it } from 'vitest';
import { MODEL_VERSION, SCORECARD_1, SCORECARD_2 } from './model-versions.js';
import { effectivePolicy } from './policy-loader.js';
import { restateReasons } from './reason-finder.js';
import type { ScoreContext } from './score-types.js';
import { scoreContext, scoreScorecard2, scoreWith } from './scorecard-model.js';

// Worked examples of scorecard-2, computed by hand from scoring-model.md (never from the implementation).
// Reasons: dᵢ = wᵢ·(1 − xᵢ) for wᵢ > 0, ranked by dᵢ rounded to 6 decimals descending, then name ascending;
// the first four, and recent_inquiries fifth when dᵢ > 0 and not among them; points_below_max is dᵢ to one decimal.

/** The published page's worked example (openapi/guides/scoring-model.md, "A worked example" and "Reasons"). */
const PAGE_EXAMPLE: ScoreContext = {
  jurisdiction: 'DE',
  on_time_ratio: 0.96,
  utilization: 0.35,
  history_months: 84,
  debt_to_income: 0.28,
  inquiries_12m: 2,
};

/** The full file of scorecard-model.test.ts. */
const FULL_FILE: ScoreContext = {
  jurisdiction: 'FR',
  on_time_ratio: 0.96,
  utilization: 0.27,
  history_months: 36,
  debt_to_income: 0.42,
  inquiries_12m: 1,
};

const EN = {
  PH1: 'Too few payments were made on time',
  PH0: 'Not enough information about payment history',
  UT1: 'Too much of the available credit is in use',
  UT0: 'Not enough information about credit in use',
  HL1: 'The credit history is too short',
  HL0: 'Not enough information about the length of credit history',
  DI1: 'Debt is too high relative to income',
  DI0: 'Not enough information about debt and income',
  RI1: 'Too many recent applications for credit',
  RI0: 'Not enough information about recent applications for credit',
};

describe('scorecard-2', () => {
  it('is the current model version', () => {
    expect(MODEL_VERSION).toBe('scorecard-2');
  });

  it('when the page example is scored (DE), then the whole result, reasons included, matches the hand computation', () => {
    // DE weights (recent_inquiries disabled, 100 shared out × 1000/900): 388.889, 333.333, 166.667, 111.111, 0.
    //   x: payment 0.8, utilization 1 − 0.35/0.9 = 0.61111, history 84/120 = 0.7, dti 1 − 0.28/0.6 = 0.53333
    //   μ = 311.111 + 203.704 + 116.667 + 59.259 = 690.741 → p50 690.7
    //   sd = 0.05·√(388.889² + 333.333² + 166.667² + 111.111²) = √756.172 = 27.4986; z·sd = 35.241
    //   p10 = 655.500 → 655.5; p90 = 725.983 → 726.0
    // Explain: a(p50) = w·(x − 0.5) = 116.667, 37.037, 33.333, 3.704; a(q) = a(p50) + z(q)·(wσ)²/sd with
    //   (wσ)² = 378.086, 277.778, 69.444, 30.864 → shifts 17.620, 12.946, 3.236, 1.438:
    //   p10: 99.047 ⇈, 24.091 ↑, 30.097 ↑, 2.266 ≈ → payment, history, utilization, dti
    //   p90: 134.287 ⇈, 49.983 ↑, 36.570 ↑, 5.142 ≈ → payment, utilization, history, dti
    // Levers (page): payment +38.9, utilization +33.4, dti +11.2.
    // Reasons, d = w·(1 − x):
    //   utilization 333.333·0.38889 = 129.630 → UT1 129.6 (lever)
    //   payment     388.889·0.2     =  77.778 → PH1  77.8 (lever)
    //   dti         111.111·0.46667 =  51.852 → DI1  51.9 (lever)
    //   history     166.667·0.3     =  50.000 → HL1  50.0 (not actionable: no lever)
    //   recent_inquiries weighs 0: never a reason, whatever inquiries_12m says.
    //   Σ d = 309.259 = 1000 − 690.741.
    const result = scoreScorecard2(PAGE_EXAMPLE, effectivePolicy('DE'));
    const f = (e: string) => `factor:${e}`;
    expect(result).toEqual({
      scenarios: [
        {
          name: 'p10',
          score: 655.5,
          explain: ['payment_history⇈', 'history_length↑', 'utilization↑', 'debt_to_income≈'].map(f),
        },
        {
          name: 'p50',
          score: 690.7,
          explain: ['payment_history⇈', 'utilization↑', 'history_length↑', 'debt_to_income≈'].map(f),
        },
        {
          name: 'p90',
          score: 726.0,
          explain: ['payment_history⇈', 'utilization↑', 'history_length↑', 'debt_to_income≈'].map(f),
        },
      ],
      levers: [
        { name: 'payment_history', direction: '+', delta: 38.9, step: 0.02 },
        { name: 'utilization', direction: '-', delta: 33.4, step: 0.09 },
        { name: 'debt_to_income', direction: '-', delta: 11.2, step: 0.06 },
      ],
      reasons: [
        {
          code: 'UT1',
          factor: 'utilization',
          rank: 1,
          points_below_max: 129.6,
          statement: EN.UT1,
          lever: 'utilization',
        },
        {
          code: 'PH1',
          factor: 'payment_history',
          rank: 2,
          points_below_max: 77.8,
          statement: EN.PH1,
          lever: 'payment_history',
        },
        {
          code: 'DI1',
          factor: 'debt_to_income',
          rank: 3,
          points_below_max: 51.9,
          statement: EN.DI1,
          lever: 'debt_to_income',
        },
        { code: 'HL1', factor: 'history_length', rank: 4, points_below_max: 50.0, statement: EN.HL1 },
      ],
    });
  });

  it('when DE disables recent_inquiries, then it is never a reason, and a tie in exact arithmetic is broken by name', () => {
    // FULL_FILE under DE: x = 0.8, 0.7, 0.3, 0.3 (inquiries ignored), weights 388.889, 333.333, 166.667, 111.111:
    //   history 166.667·0.7 = 116.667 → HL1 116.7;  utilization 333.333·0.3 = 100 → UT1 100.0
    //   payment 388.889·0.2 = 700/9 = 77.778 and dti 111.111·0.7 = 700/9 = 77.778: equal in exact arithmetic, so
    //   debt_to_income ranks before payment_history (in binary floating point payment's d is 77.77777777777794 and
    //   dti's 77.77777777777777: unrounded, payment would come first).
    //   Σ d = 372.222 = 1000 − 627.778. Levers: payment +38.9, utilization +33.3, dti +11.1 (scorecard-model.test.ts).
    const { reasons } = scoreScorecard2({ ...FULL_FILE, jurisdiction: 'DE' }, effectivePolicy('DE'));
    expect(reasons).toEqual([
      { code: 'HL1', factor: 'history_length', rank: 1, points_below_max: 116.7, statement: EN.HL1 },
      {
        code: 'UT1',
        factor: 'utilization',
        rank: 2,
        points_below_max: 100.0,
        statement: EN.UT1,
        lever: 'utilization',
      },
      {
        code: 'DI1',
        factor: 'debt_to_income',
        rank: 3,
        points_below_max: 77.8,
        statement: EN.DI1,
        lever: 'debt_to_income',
      },
      {
        code: 'PH1',
        factor: 'payment_history',
        rank: 4,
        points_below_max: 77.8,
        statement: EN.PH1,
        lever: 'payment_history',
      },
    ]);
  });

  it('when recent_inquiries counts but is not among the four, then it is added as a fifth reason', () => {
    // FULL_FILE under FR (default weights): d = 350·0.2 = 70, 300·0.3 = 90, 150·0.7 = 105, 100·0.7 = 70, 100·(1/6) = 16.667
    //   → HL1 105.0, UT1 90.0, then the exact tie 70/70 by name: DI1, PH1; RI1 16.7 as fifth.
    //   Σ d = 351.667 = 1000 − 648.333. Levers: payment 35.0, utilization 30.0, inquiries 16.7; debt_to_income's
    //   lever (10.0) is cut by the cap of three, so its reason names none.
    const { reasons } = scoreScorecard2(FULL_FILE, effectivePolicy('FR'));
    expect(reasons).toEqual([
      { code: 'HL1', factor: 'history_length', rank: 1, points_below_max: 105.0, statement: EN.HL1 },
      {
        code: 'UT1',
        factor: 'utilization',
        rank: 2,
        points_below_max: 90.0,
        statement: EN.UT1,
        lever: 'utilization',
      },
      { code: 'DI1', factor: 'debt_to_income', rank: 3, points_below_max: 70.0, statement: EN.DI1 },
      {
        code: 'PH1',
        factor: 'payment_history',
        rank: 4,
        points_below_max: 70.0,
        statement: EN.PH1,
        lever: 'payment_history',
      },
      {
        code: 'RI1',
        factor: 'recent_inquiries',
        rank: 5,
        points_below_max: 16.7,
        statement: EN.RI1,
        lever: 'recent_inquiries',
      },
    ]);
  });

  it('when every input is missing (a thin file), then the reasons are the missing codes, inquiries fifth', () => {
    // Every x = 0.5: d = w/2 = 175, 150, 75, 50, 50 (the 50/50 tie by name: debt_to_income, then recent_inquiries
    // as fifth). Σ d = 500 = 1000 − 500. Scores as scorecard-1 (338.2, 500, 661.8); no lever (no input present).
    const result = scoreScorecard2({ jurisdiction: 'FR' }, effectivePolicy('FR'));
    expect(result.scenarios.map((s) => s.score)).toEqual([338.2, 500, 661.8]);
    expect(result.levers).toEqual([]);
    expect(result.reasons).toEqual([
      { code: 'PH0', factor: 'payment_history', rank: 1, points_below_max: 175.0, statement: EN.PH0 },
      { code: 'UT0', factor: 'utilization', rank: 2, points_below_max: 150.0, statement: EN.UT0 },
      { code: 'HL0', factor: 'history_length', rank: 3, points_below_max: 75.0, statement: EN.HL0 },
      { code: 'DI0', factor: 'debt_to_income', rank: 4, points_below_max: 50.0, statement: EN.DI0 },
      { code: 'RI0', factor: 'recent_inquiries', rank: 5, points_below_max: 50.0, statement: EN.RI0 },
    ]);
  });

  it('when every input is at its maximum, then there is no reason, float noise included', () => {
    // x = 1 everywhere, μ = 1000. In binary floating point (1 − 0.8) / 0.2 = 0.9999999999999998, so payment's
    // d = 350·2.2e-16 = 7.8e-14, which rounds to 0 at 6 decimals: at its maximum, so no reason.
    const result = scoreScorecard2(
      {
        jurisdiction: 'FR',
        on_time_ratio: 1,
        utilization: 0,
        history_months: 120,
        debt_to_income: 0,
        inquiries_12m: 0,
      },
      effectivePolicy('FR'),
    );
    expect(result.scenarios[1].score).toBe(1000);
    expect(result.reasons).toEqual([]);
  });

  it('when recent_inquiries is among the first four, then it is not repeated, and fewer than four may be given', () => {
    // payment, utilization, history at their maximum (d = 0); dti missing: d = 100·0.5 = 50 (DI0);
    // inquiries 3: x = 1 − 3/6 = 0.5, d = 50 (RI1). Tie by name: DI0 rank 1, RI1 rank 2.
    // p50 = 350 + 300 + 150 + 50 + 50 = 900.0; inquiries 3 → 2: x = 2/3, μ = 916.667 → 916.7, lever delta 16.7.
    const result = scoreScorecard2(
      { jurisdiction: 'FR', on_time_ratio: 1, utilization: 0, history_months: 120, inquiries_12m: 3 },
      effectivePolicy('FR'),
    );
    expect(result.levers).toEqual([{ name: 'recent_inquiries', direction: '-', delta: 16.7, step: 1 }]);
    expect(result.reasons).toEqual([
      { code: 'DI0', factor: 'debt_to_income', rank: 1, points_below_max: 50.0, statement: EN.DI0 },
      {
        code: 'RI1',
        factor: 'recent_inquiries',
        rank: 2,
        points_below_max: 50.0,
        statement: EN.RI1,
        lever: 'recent_inquiries',
      },
    ]);
  });

  it('when German is asked for, then only the statements change, and restating gives the same reasons', () => {
    // The page example's reasons (above), stated from the catalog in German.
    const de = scoreScorecard2(PAGE_EXAMPLE, effectivePolicy('DE'), { language: 'de' });
    expect(de.reasons.map((r) => [r.code, r.statement])).toEqual([
      ['UT1', 'Ein zu großer Teil des verfügbaren Kreditrahmens wird genutzt'],
      ['PH1', 'Zu wenige Zahlungen wurden pünktlich geleistet'],
      ['DI1', 'Die Schulden sind im Verhältnis zum Einkommen zu hoch'],
      ['HL1', 'Die Kredithistorie ist zu kurz'],
    ]);
    const en = scoreScorecard2(PAGE_EXAMPLE, effectivePolicy('DE'));
    expect(restateReasons(en.reasons, 'de')).toEqual(de.reasons);
    expect(restateReasons(de.reasons, 'en')).toEqual(en.reasons);
    expect({ ...de, reasons: [] }).toEqual({ ...en, reasons: [] });
  });
});

describe('scorecard-1 and scorecard-2 side by side', () => {
  it('when (0.9 − 0.8) / 0.2 = 0.49999999999999994 makes an exact tie at 0 look non-zero, then only scorecard-2 ranks it by name', () => {
    // on_time_ratio 0.9: x = 0.5 exactly, but 0.4999999999999999 in binary floating point, so payment's
    // a(p50) = 350·(x − 0.5) = −3.9e-14 instead of 0; every other input is missing (x = 0.5, a(p50) = 0).
    //   scorecard-1 compares |−3.9e-14| > 0: payment_history first, then the zeros by name (utilization is fifth).
    //   scorecard-2 compares Math.round(a·1e6) = 0 for all five: by name, payment_history third.
    // p10/p90 are the same in both: sd = √(17.5² + 75² + 37.5² + 25² + 25²) = √8587.5 = 92.6688, z·sd = 118.760,
    //   p10 = 381.240 → 381.2, p90 = 618.760 → 618.8; shifts z·(wσ)²/sd = 4.235, 77.790, 19.448, 8.643, 8.643:
    //   p10 utilization −77.79 ⇊, history −19.45 ↓, dti and inquiries −8.64 ≈ (an exact tie: by name), payment −4.24 dropped.
    // Lever: 0.9 → 0.92, x 0.6, μ 535.0, delta 35.0.
    // Reasons: payment d = 350·0.5 = 175 (present: PH1), then the missing 150, 75, 50, 50; inquiries fifth.
    const context: ScoreContext = { jurisdiction: 'FR', on_time_ratio: 0.9 };
    const policy = effectivePolicy('FR');
    const f = (e: string) => `factor:${e}`;
    const p10 = ['utilization⇊', 'history_length↓', 'debt_to_income≈', 'recent_inquiries≈'].map(f);
    const p90 = ['utilization⇈', 'history_length↑', 'debt_to_income≈', 'recent_inquiries≈'].map(f);
    const lever = { name: 'payment_history', direction: '+', delta: 35.0, step: 0.02 };

    expect(scoreWith(SCORECARD_1, context, policy)).toEqual({
      scenarios: [
        { name: 'p10', score: 381.2, explain: p10 },
        {
          name: 'p50',
          score: 500,
          explain: ['payment_history≈', 'debt_to_income≈', 'history_length≈', 'recent_inquiries≈'].map(f),
        },
        { name: 'p90', score: 618.8, explain: p90 },
      ],
      levers: [lever],
    });
    expect(scoreWith(SCORECARD_2, context, policy)).toEqual({
      scenarios: [
        { name: 'p10', score: 381.2, explain: p10 },
        {
          name: 'p50',
          score: 500,
          explain: ['debt_to_income≈', 'history_length≈', 'payment_history≈', 'recent_inquiries≈'].map(f),
        },
        { name: 'p90', score: 618.8, explain: p90 },
      ],
      levers: [lever],
      reasons: [
        {
          code: 'PH1',
          factor: 'payment_history',
          rank: 1,
          points_below_max: 175.0,
          statement: EN.PH1,
          lever: 'payment_history',
        },
        { code: 'UT0', factor: 'utilization', rank: 2, points_below_max: 150.0, statement: EN.UT0 },
        { code: 'HL0', factor: 'history_length', rank: 3, points_below_max: 75.0, statement: EN.HL0 },
        { code: 'DI0', factor: 'debt_to_income', rank: 4, points_below_max: 50.0, statement: EN.DI0 },
        { code: 'RI0', factor: 'recent_inquiries', rank: 5, points_below_max: 50.0, statement: EN.RI0 },
      ],
    });
  });

  it('when an attribution of exactly 15 is 14.999999999999996 in floating point, then only scorecard-2 marks it ↑', () => {
    // history_months 72: x = 72/120 = 0.6, a(p50) = 150·(0.6 − 0.5) = 15 (↑), but 0.6 − 0.5 = 0.09999999999999998
    // in binary floating point, so scorecard-1 sees 14.999999999999996 (≈). Other inputs missing (a(p50) = 0).
    // sd = √(87.5² + 75² + 7.5² + 25² + 25²) = √14587.5 = 120.779, z·sd = 154.784: μ = 515,
    //   p10 = 360.216 → 360.2, p90 = 669.784 → 669.8.
    // Shifts z·(wσ)²/sd = 81.238, 59.685, 0.597, 6.632, 6.632:
    //   p10: payment −81.24 ⇊, utilization −59.69 ↓, history 14.40 ≈, dti −6.63 ≈ (tie with inquiries, by name)
    //   p90: payment 81.24 ⇈, utilization 59.69 ↑, history 15.60 ↑, dti 6.63 ≈
    // Reasons: PH0 175, UT0 150, HL1 150·0.4 = 60, DI0 50, RI0 50 (fifth); Σ = 485 = 1000 − 515. No lever.
    const context: ScoreContext = { jurisdiction: 'FR', history_months: 72 };
    const policy = effectivePolicy('FR');
    const f = (e: string) => `factor:${e}`;
    const p10 = ['payment_history⇊', 'utilization↓', 'history_length≈', 'debt_to_income≈'].map(f);
    const p90 = ['payment_history⇈', 'utilization↑', 'history_length↑', 'debt_to_income≈'].map(f);
    const zeros = ['debt_to_income≈', 'payment_history≈', 'recent_inquiries≈'].map(f);
    const v1 = scoreWith(SCORECARD_1, context, policy);
    const v2 = scoreWith(SCORECARD_2, context, policy);
    expect(v1.scenarios).toEqual([
      { name: 'p10', score: 360.2, explain: p10 },
      { name: 'p50', score: 515, explain: [f('history_length≈'), ...zeros] },
      { name: 'p90', score: 669.8, explain: p90 },
    ]);
    expect(v2.scenarios).toEqual([
      { name: 'p10', score: 360.2, explain: p10 },
      { name: 'p50', score: 515, explain: [f('history_length↑'), ...zeros] },
      { name: 'p90', score: 669.8, explain: p90 },
    ]);
    expect(v2.reasons.map((r) => [r.code, r.rank, r.points_below_max])).toEqual([
      ['PH0', 1, 175.0],
      ['UT0', 2, 150.0],
      ['HL1', 3, 60.0],
      ['DI0', 4, 50.0],
      ['RI0', 5, 50.0],
    ]);
  });

  it('when scorecard-1 is named, then it is scoreContext, unchanged and without reasons', () => {
    const policy = effectivePolicy('FR');
    expect(scoreWith(SCORECARD_1, FULL_FILE, policy)).toEqual(scoreContext(FULL_FILE, policy));
    expect(scoreWith(SCORECARD_1, FULL_FILE, policy)).not.toHaveProperty('reasons');
  });

  it('when an unknown version is named, then scoring throws a RangeError', () => {
    // @ts-expect-error: not a released version
    expect(() => scoreWith('scorecard-9', FULL_FILE, effectivePolicy('FR'))).toThrow(RangeError);
  });
});
