import { FACTORS, type FactorName, isFactorName } from './factor-table.js';
import catalogData from './model-catalog.json' with { type: 'json' };
import { isModelVersion, MODEL_VERSION, MODEL_VERSIONS, type ModelVersion } from './model-versions.js';

/** The languages every reason statement is written in; `en` is the default. */
export type ReasonLanguage = 'en' | 'de';
/** The supported statement languages, the default first. */
export const REASON_LANGUAGES: readonly ReasonLanguage[] = Object.freeze(['en', 'de']);
/** The language of a statement when none is asked for. */
export const DEFAULT_REASON_LANGUAGE: ReasonLanguage = 'en';

/** A reason code: the factor's two letters, then `1` when its input was present (low) or `0` when missing. */
export type ReasonCode = 'PH1' | 'PH0' | 'UT1' | 'UT0' | 'HL1' | 'HL0' | 'DI1' | 'DI0' | 'RI1' | 'RI0';

/** One catalog entry of a reason code, with its statement in every language. */
export interface CatalogReasonCode {
  readonly code: ReasonCode;
  readonly factor: FactorName;
  /** Whether the code is given when the factor's input was present or missing (a thin file). */
  readonly input: 'present' | 'missing';
  readonly statements: Readonly<Record<ReasonLanguage, string>>;
}

/** How a version ranks its reasons (PMML 4.4 Scorecard names). */
export interface CatalogReasonMethod {
  readonly reason_code_algorithm: 'pointsBelow';
  readonly baseline_method: 'max';
  /** The scenario whose inputs the points below maximum are taken from. */
  readonly scenario: 'p50';
  readonly max_reasons: number;
  /** Whether `recent_inquiries` is added as a fifth reason when it counts and is not among the first four. */
  readonly inquiries_as_fifth: boolean;
}

/** A factor as a catalog lists it: its input and the model's own weight. */
export interface CatalogFactor {
  readonly name: FactorName;
  readonly context_key: string;
  readonly weight: number;
  readonly actionable: boolean;
}

/** One released model version. */
export interface CatalogModel {
  readonly model_version: ModelVersion;
  readonly status: 'current' | 'retired';
  readonly description: string;
  readonly factors: readonly CatalogFactor[];
  /** null for a version without Reasons (scorecard-1). */
  readonly reason_method: CatalogReasonMethod | null;
  readonly reason_codes: readonly CatalogReasonCode[];
}

/** The model catalog: every released version, the current one first. */
export interface ModelCatalog {
  readonly note: string;
  readonly models: readonly CatalogModel[];
}

/** Thrown when the catalog file is malformed; the message lists every problem found. */
export class ModelCatalogError extends Error {
  constructor(readonly problems: readonly string[]) {
    super(`invalid model catalog:\n- ${problems.join('\n- ')}`);
    this.name = 'ModelCatalogError';
  }
}

const CODE_PATTERN = /^(PH|UT|HL|DI|RI)[01]$/;
const PREFIX: Readonly<Record<FactorName, string>> = {
  payment_history: 'PH',
  utilization: 'UT',
  history_length: 'HL',
  debt_to_income: 'DI',
  recent_inquiries: 'RI',
};

/** The reason code for a factor whose input was present (`…1`) or missing (`…0`). */
export function reasonCodeOf(factor: FactorName, present: boolean): ReasonCode {
  const codes = CODES[factor];
  return present ? codes[1] : codes[0];
}

/** Each factor's two codes (missing, present), made once: `reasonCodeOf` runs for every reason of every scoring. */
const CODES = Object.fromEntries(
  (Object.keys(PREFIX) as FactorName[]).map((factor) => [
    factor,
    [`${PREFIX[factor]}0`, `${PREFIX[factor]}1`] as const,
  ]),
) as unknown as Readonly<Record<FactorName, readonly [ReasonCode, ReasonCode]>>;

/**
 * Validates a parsed catalog: every released version exactly once, exactly one current (`MODEL_VERSION`),
 * the factors of the engine's table, and for a version with Reasons one code per factor and input state,
 * each with a non-empty statement in every language. Throws `ModelCatalogError` listing every problem.
 */
export function parseModelCatalog(data: unknown): ModelCatalog {
  const problems: string[] = [];
  const d = data as { note?: unknown; models?: unknown };
  if (typeof d?.note !== 'string') problems.push('note must be a string');
  if (!Array.isArray(d?.models)) throw new ModelCatalogError([...problems, 'models must be an array']);
  const seen = new Set<string>();
  for (const [i, m] of (d.models as CatalogModel[]).entries()) {
    const where = `models[${i}]`;
    if (!isModelVersion(m.model_version))
      problems.push(`${where}: unknown model_version "${m.model_version}"`);
    if (seen.has(m.model_version)) problems.push(`${where}: ${m.model_version} is listed twice`);
    seen.add(m.model_version);
    const current = m.model_version === MODEL_VERSION;
    if (m.status !== (current ? 'current' : 'retired'))
      problems.push(`${where}: status must be "${current ? 'current' : 'retired'}"`);
    const table = FACTORS.map((f) => [f.name, f.key, f.weight, f.actionable].join());
    const listed = (m.factors ?? []).map((f) => [f.name, f.context_key, f.weight, f.actionable].join());
    if (listed.join(';') !== table.join(';')) problems.push(`${where}.factors differ from the factor table`);
    if (m.reason_method === null) {
      if ((m.reason_codes ?? []).length > 0) problems.push(`${where}: reason codes without a reason method`);
      continue;
    }
    if (m.reason_method?.reason_code_algorithm !== 'pointsBelow' || m.reason_method.baseline_method !== 'max')
      problems.push(`${where}.reason_method must be pointsBelow from max`);
    const codes = new Set<string>();
    for (const c of m.reason_codes ?? []) {
      const at = `${where}.reason_codes ${c.code}`;
      if (!CODE_PATTERN.test(c.code) || !isFactorName(c.factor)) {
        problems.push(`${at}: malformed code or factor`);
        continue;
      }
      if (
        c.code !== reasonCodeOf(c.factor, c.input === 'present') ||
        !['present', 'missing'].includes(c.input)
      )
        problems.push(`${at}: the code does not match ${c.factor} with input ${c.input}`);
      if (codes.has(c.code)) problems.push(`${at}: listed twice`);
      codes.add(c.code);
      for (const language of REASON_LANGUAGES) {
        const statement = c.statements?.[language];
        if (typeof statement !== 'string' || statement.trim() === '')
          problems.push(`${at}: no statement in ${language}`);
      }
    }
    for (const f of FACTORS)
      for (const present of [true, false])
        if (!codes.has(reasonCodeOf(f.name, present)))
          problems.push(`${where}: no reason code ${reasonCodeOf(f.name, present)}`);
  }
  for (const version of MODEL_VERSIONS)
    if (!seen.has(version)) problems.push(`${version} is not in the catalog`);
  if (problems.length > 0) throw new ModelCatalogError(problems);
  return deepFreeze(d as ModelCatalog);
}

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null) {
    for (const item of Object.values(value)) deepFreeze(item);
    Object.freeze(value);
  }
  return value;
}

/** The shipped catalog (`src/model-catalog.json`), validated once when the engine is imported. */
export const MODEL_CATALOG: ModelCatalog = parseModelCatalog(structuredClone(catalogData));

/** A released version's catalog entry, or undefined for a version the engine does not know. */
export function catalogModel(version: string): CatalogModel | undefined {
  return MODEL_CATALOG.models.find((m) => m.model_version === version);
}

/** Statements by code, per version that has Reasons, per language: looked up on every scoring. */
const STATEMENTS = new Map<string, Map<string, Readonly<Record<ReasonLanguage, string>>>>(
  MODEL_CATALOG.models.map((m) => [
    m.model_version,
    new Map(m.reason_codes.map((c) => [c.code, c.statements])),
  ]),
);

/** The catalog's statement of a reason code in a language. Throws for a code the version does not have. */
export function reasonStatement(
  version: ModelVersion,
  code: ReasonCode,
  language: ReasonLanguage = DEFAULT_REASON_LANGUAGE,
): string {
  const statements = STATEMENTS.get(version)?.get(code);
  if (statements === undefined) throw new RangeError(`${version} has no reason code ${code}`);
  return statements[language];
}

/** Whether a string is a supported statement language. */
export function isReasonLanguage(language: string): language is ReasonLanguage {
  return (REASON_LANGUAGES as readonly string[]).includes(language);
}
