import { describe, expect, it } from 'vitest';
import {
  catalogModel,
  MODEL_CATALOG,
  ModelCatalogError,
  parseModelCatalog,
  REASON_LANGUAGES,
  reasonStatement,
} from './model-catalog.js';
import catalogData from './model-catalog.json' with { type: 'json' };

const copy = () => structuredClone(catalogData) as unknown as { models: Record<string, unknown>[] };

describe('the model catalog', () => {
  it('lists scorecard-2 as current and scorecard-1 as retired, with the factors of the page', () => {
    expect(MODEL_CATALOG.models.map((m) => [m.model_version, m.status])).toEqual([
      ['scorecard-2', 'current'],
      ['scorecard-1', 'retired'],
    ]);
    expect(catalogModel('scorecard-2')?.factors.map((f) => [f.name, f.context_key, f.weight])).toEqual([
      ['payment_history', 'on_time_ratio', 350],
      ['utilization', 'utilization', 300],
      ['history_length', 'history_months', 150],
      ['debt_to_income', 'debt_to_income', 100],
      ['recent_inquiries', 'inquiries_12m', 100],
    ]);
    expect(catalogModel('scorecard-2')?.reason_method).toMatchObject({
      reason_code_algorithm: 'pointsBelow',
      baseline_method: 'max',
    });
    expect(catalogModel('scorecard-1')?.reason_method).toBeNull();
    expect(catalogModel('scorecard-9')).toBeUndefined();
  });

  it('holds ten codes for scorecard-2, each with a statement in English and a different one in German', () => {
    const codes = catalogModel('scorecard-2')?.reason_codes ?? [];
    expect(codes.map((c) => c.code)).toEqual([
      'PH1',
      'PH0',
      'UT1',
      'UT0',
      'HL1',
      'HL0',
      'DI1',
      'DI0',
      'RI1',
      'RI0',
    ]);
    for (const c of codes) expect(c.statements.de).not.toBe(c.statements.en);
    expect(REASON_LANGUAGES).toEqual(['en', 'de']);
    expect(reasonStatement('scorecard-2', 'PH1')).toBe('Too few payments were made on time');
    expect(reasonStatement('scorecard-2', 'PH1', 'de')).toBe(
      'Zu wenige Zahlungen wurden pünktlich geleistet',
    );
    expect(reasonStatement('scorecard-2', 'PH0', 'de')).toBe(
      'Keine ausreichenden Informationen zur Zahlungshistorie',
    );
    expect(() => reasonStatement('scorecard-1', 'PH1')).toThrow(RangeError);
  });

  it('is frozen, so no caller can change what every answer states', () => {
    expect(Object.isFrozen(MODEL_CATALOG.models[0]?.reason_codes[0]?.statements)).toBe(true);
  });

  it('when a statement, a code or the current status is wrong, then parsing lists every problem', () => {
    const bad = copy();
    const v2 = bad.models[0] as { reason_codes: { statements: Record<string, string> }[]; status: string };
    delete v2.reason_codes[0]?.statements.de;
    v2.reason_codes.pop();
    (bad.models[1] as { status: string }).status = 'current';
    let error: unknown;
    try {
      parseModelCatalog(bad);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ModelCatalogError);
    expect((error as ModelCatalogError).problems).toEqual([
      'models[0].reason_codes PH1: no statement in de',
      'models[0]: no reason code RI0',
      'models[1]: status must be "retired"',
    ]);
  });

  it('when a released version is missing, then parsing refuses the file', () => {
    const bad = copy();
    bad.models.pop();
    expect(() => parseModelCatalog(bad)).toThrow(/scorecard-1 is not in the catalog/);
  });
});
