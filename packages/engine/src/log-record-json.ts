import {
  LOG_SCHEMA_V2,
  type LogRecord,
  type LogRecordV2,
  type ScoringRecordInput,
} from './log-record-schema.js';
import { SCORECARD_1 } from './model-versions.js';
import type { Reason, ScoreContext, Scorecard2Result, ScoreResult } from './score-types.js';

/** `String.prototype.isWellFormed` (ES2024, Node 20+), which the compiler's ES2022 library does not declare. */
type WellFormedCheck = string & { isWellFormed(): boolean };

/** The context's keys in UTF-16 code unit order, the order RFC 8785 §3.2.3 writes them in. */
const CONTEXT_KEYS = [
  'debt_to_income',
  'history_months',
  'inquiries_12m',
  'jurisdiction',
  'on_time_ratio',
  'utilization',
] as const;

/** Thrown inside the serializer when the value is not the record shape it was specialised for. */
const NOT_THE_SHAPE: unique symbol = Symbol('not the log record shape');

/**
 * The RFC 8785 canonical JSON of a log record: a copy of the record with every object's keys inserted in
 * canonical (UTF-16 code unit) order, written by the native `JSON.stringify`. The record's shape is fixed,
 * so that order is written out here instead of sorting keys at run time; strings and numbers are then
 * serialised exactly as JCS asks (RFC 8785 §3.2.2 defers to ECMAScript's JSON.stringify for both).
 * Gives `undefined` when the value is not exactly that shape (an extra or missing key, a wrong type, a
 * non-finite number, a string with a lone surrogate, an object that is not plain), so the caller can fall
 * back to the generic serializer; the tests compare both with the `canonicalize` library on random records.
 */
export function logRecordJson(record: LogRecord | LogRecordV2): string | undefined {
  try {
    return JSON.stringify(canonicalCopy(record));
  } catch (error) {
    if (error === NOT_THE_SHAPE) return undefined;
    throw error;
  }
}

/**
 * The same JSON for a scoring the engine just made (`scoreAndLog`), as its UTF-8 bytes held in a one-byte
 * ("latin1") string: each character is one byte of the UTF-8 encoding, so writing it out as latin1 is a
 * plain copy (several times cheaper than UTF-8 encoding the two-byte string the explain markers would
 * otherwise make). Its context passed `assertValidContext` (known keys, finite numbers, an ASCII
 * jurisdiction) and its result was built by the engine, so the shape checks of `logRecordJson` are skipped;
 * only the free-text subject and the policy version are checked for lone surrogates (undefined then, and the
 * caller takes the generic path). `schema` is the record's tag.
 *
 * Written out piece by piece in canonical key order, with no copy of the record for JSON.stringify to walk.
 * Numbers are written by `String`, which is JSON.stringify's form for finite numbers (-0 as `0` in both); the
 * jurisdiction, the lever names and directions and the scenario names are ASCII that JSON does not escape,
 * and the explain entries are the engine's own strings, which JSON does not escape either (both tested); the
 * subject, policy version and schema go through JSON.stringify.
 */
export function scoringRecordUtf8(
  schema: string,
  policyVersion: string,
  subject: string,
  context: ScoreContext,
  result: ScoreResult,
): string | undefined {
  if (!(subject as WellFormedCheck).isWellFormed() || !(policyVersion as WellFormedCheck).isWellFormed())
    return undefined;
  return `{"context":${contextUtf8(context)},"model_version":"${SCORECARD_1}","policy_version":${utf8AsLatin1(JSON.stringify(policyVersion))},"result":${resultUtf8(result)},"schema":${utf8AsLatin1(JSON.stringify(schema))},"subject":${utf8AsLatin1(JSON.stringify(subject))}}`;
}

/**
 * `scoringRecordUtf8` of a score-log/2 record (see `LogRecordV2`): the same context and result, written the
 * same way, between the record's other members in canonical key order (context, item, kind, model_version,
 * policy_id, policy_version, request_id, result, run_id, salt, schema, scored_at, subject). The server's
 * strings (request or run id, time, salt), the model version and the policy id go through JSON.stringify, so
 * whatever they hold is written as JCS writes it; `undefined` when a string has a lone surrogate or the item
 * is not a non-negative safe integer (the caller then takes the generic path).
 */
export function scoringRecordV2Utf8(input: ScoringRecordInput): string | undefined {
  const { identity, subject, policy_version, policy_id, model_version, scored_at, salt } = input;
  if (
    !(subject as WellFormedCheck).isWellFormed() ||
    !(policy_version as WellFormedCheck).isWellFormed() ||
    !(policy_id as WellFormedCheck).isWellFormed() ||
    !(model_version as WellFormedCheck).isWellFormed() ||
    !(scored_at as WellFormedCheck).isWellFormed() ||
    !(salt as WellFormedCheck).isWellFormed()
  )
    return undefined;
  let json = `{"context":${contextUtf8(input.context)},`;
  if (identity.kind === 'run_item') {
    const { item } = identity;
    if (!Number.isSafeInteger(item) || item < 0) return undefined;
    json += `"item":${String(item)},"kind":"run_item",`;
  } else json += '"kind":"score",';
  json += `"model_version":${jsonUtf8(model_version)},"policy_id":${jsonUtf8(policy_id)},"policy_version":${jsonUtf8(policy_version)},`;
  if (identity.kind === 'score') {
    const { request_id } = identity;
    if (!(request_id as WellFormedCheck).isWellFormed()) return undefined;
    json += `"request_id":${jsonUtf8(request_id)},"result":${resultUtf8(input.result)},`;
  } else {
    const { run_id } = identity;
    if (!(run_id as WellFormedCheck).isWellFormed()) return undefined;
    json += `"result":${resultUtf8(input.result)},"run_id":${jsonUtf8(run_id)},`;
  }
  return `${json}"salt":${jsonUtf8(salt)},"schema":"${LOG_SCHEMA_V2}","scored_at":${jsonUtf8(scored_at)},"subject":${jsonUtf8(subject)}}`;
}

/** A well-formed string's JSON, as its UTF-8 bytes one per character. */
export function jsonUtf8(text: string): string {
  return utf8AsLatin1(JSON.stringify(text));
}

/** The canonical JSON of a validated context (see `scoringRecordUtf8`), its UTF-8 bytes one per character. */
function contextUtf8(context: ScoreContext): string {
  let json = '{';
  let first = true;
  for (let k = 0; k < CONTEXT_KEYS.length; k++) {
    const key = CONTEXT_KEYS[k] as (typeof CONTEXT_KEYS)[number];
    const value = context[key];
    if (value === undefined) continue;
    json += `${first ? '' : ','}"${key}":${key === 'jurisdiction' ? `"${value}"` : String(value)}`;
    first = false;
  }
  return `${json}}`;
}

/**
 * The canonical JSON of a result the engine built (see `scoringRecordUtf8`), its UTF-8 bytes one per
 * character; a scorecard-2 result's reasons between its levers and scenarios (canonical key order), each
 * reason's keys in canonical order too (code, factor, lever when there is one, points_below_max, rank,
 * statement). Codes, factor and lever names are the engine's ASCII identifiers; a statement, catalog text,
 * goes through JSON.stringify.
 */
function resultUtf8(result: ScoreResult | Scorecard2Result): string {
  let json = '{"levers":[';
  const { levers, scenarios } = result;
  for (let i = 0; i < levers.length; i++) {
    const lever = levers[i] as ScoreResult['levers'][number];
    json += `${i === 0 ? '' : ','}{"delta":${oneDecimal(lever.delta)},"direction":"${lever.direction}","name":"${lever.name}","step":${String(lever.step)}}`;
  }
  const { reasons } = result as Partial<Scorecard2Result>;
  if (reasons !== undefined) {
    json += '],"reasons":[';
    for (let i = 0; i < reasons.length; i++) {
      const reason = reasons[i] as Reason;
      json += `${i === 0 ? '' : ','}{"code":"${reason.code}","factor":"${reason.factor}",${reason.lever === undefined ? '' : `"lever":"${reason.lever}",`}"points_below_max":${oneDecimal(reason.points_below_max)},"rank":${String(reason.rank)},"statement":${statementUtf8(reason.statement)}}`;
    }
  }
  json += '],"scenarios":[';
  for (let i = 0; i < scenarios.length; i++) {
    const scenario = scenarios[i] as ScoreResult['scenarios'][number];
    json += `${i === 0 ? '' : ','}{"explain":[`;
    const { explain } = scenario;
    for (let j = 0; j < explain.length; j++)
      json += `${j === 0 ? '"' : ',"'}${explainUtf8(explain[j] as string)}"`;
    json += `],"name":"${scenario.name}","score":${oneDecimal(scenario.score)}}`;
  }
  return `${json}]}`;
}

/**
 * `JSON.stringify(result)` of a result the engine built, as UTF-8 bytes one per character: the members in
 * the order the engine makes them (scenarios, levers, reasons; a scenario's name, score, explain; a lever's
 * name, direction, delta, step; a reason's code, factor, rank, points_below_max, statement, then lever when
 * there is one), which is the order the API answers them in. Written out as `resultUtf8` writes the record's
 * canonical form, from the same pieces, so an answer costs no walk of the result by `JSON.stringify` and no
 * UTF-8 encoding of its explain markers (tested equal to `JSON.stringify` on random results, so a member
 * the engine adds to its result, which this would leave out, fails that test).
 */
export function answerResultUtf8(result: Scorecard2Result): string {
  const { levers, scenarios, reasons } = result;
  let json = '{"scenarios":[';
  for (let i = 0; i < scenarios.length; i++) {
    const scenario = scenarios[i] as ScoreResult['scenarios'][number];
    json += `${i === 0 ? '' : ','}{"name":"${scenario.name}","score":${oneDecimal(scenario.score)},"explain":[`;
    const { explain } = scenario;
    for (let j = 0; j < explain.length; j++)
      json += `${j === 0 ? '"' : ',"'}${explainUtf8(explain[j] as string)}"`;
    json += ']}';
  }
  json += '],"levers":[';
  for (let i = 0; i < levers.length; i++) {
    const lever = levers[i] as ScoreResult['levers'][number];
    json += `${i === 0 ? '' : ','}{"name":"${lever.name}","direction":"${lever.direction}","delta":${oneDecimal(lever.delta)},"step":${String(lever.step)}}`;
  }
  json += '],"reasons":[';
  for (let i = 0; i < reasons.length; i++) {
    const reason = reasons[i] as Reason;
    json += `${i === 0 ? '' : ','}{"code":"${reason.code}","factor":"${reason.factor}","rank":${String(reason.rank)},"points_below_max":${oneDecimal(reason.points_below_max)},"statement":${statementUtf8(reason.statement)}${reason.lever === undefined ? '' : `,"lever":"${reason.lever}"`}}`;
  }
  return `${json}]}`;
}

/**
 * `String(x)` (JSON's form of a finite number) of a number the engine rounded to one decimal (scores, lever
 * deltas), made from integers: about half the cost of the shortest round-trip conversion. When x is the
 * double nearest k/10 for an integer k, "w.t" (or "w" when t is 0) parses back to x and nothing shorter
 * does, so it is exactly what String writes; any other number is given to String.
 */
export function oneDecimal(x: number): string {
  const k = Math.round(x * 10);
  if (k / 10 !== x || !(k >= 0 && k <= 1e15)) return String(x);
  const whole = Math.floor(k / 10);
  const tenth = k - whole * 10;
  return tenth === 0 ? String(whole) : `${whole}.${tenth}`;
}

/** Printable ASCII and DEL: all JSON.stringify leaves of the controls, as it escapes them. */
const ASCII = /^[ -\x7f]*$/;

/** A well-formed string's UTF-8 bytes as a one-byte string (itself when it is printable ASCII). */
export function utf8AsLatin1(text: string): string {
  return ASCII.test(text) ? text : Buffer.from(text, 'utf8').toString('latin1');
}

/** The JSON of each reason statement as UTF-8 bytes one per character, made once: the catalog has a few dozen. */
const STATEMENT_UTF8 = new Map<string, string>();

function statementUtf8(statement: string): string {
  let bytes = STATEMENT_UTF8.get(statement);
  if (bytes === undefined) {
    bytes = jsonUtf8(statement);
    // Only the engine's statements reach here (well-formed catalog text); bound the cache all the same.
    if (STATEMENT_UTF8.size < 1024) STATEMENT_UTF8.set(statement, bytes);
  }
  return bytes;
}

/** `utf8AsLatin1` of each explain entry, made once: there are a few dozen distinct entries. */
const EXPLAIN_UTF8 = new Map<string, string>();

function explainUtf8(entry: string): string {
  let bytes = EXPLAIN_UTF8.get(entry);
  if (bytes === undefined) {
    bytes = utf8AsLatin1(entry);
    EXPLAIN_UTF8.set(entry, bytes);
  }
  return bytes;
}

function canonicalCopy(record: LogRecord | LogRecordV2) {
  if (isPlain(record) && Object.hasOwn(record, 'salt')) return canonicalCopyV2(record as LogRecordV2);
  plainWithKeys(record, 6);
  if (record.schema === undefined || record.model_version === undefined) throw NOT_THE_SHAPE;
  return {
    context: contextCopy(record.context),
    model_version: str(record.model_version),
    policy_version: str(record.policy_version),
    result: resultCopy(record.result),
    schema: str(record.schema),
    subject: str(record.subject),
  };
}

/** A score-log/2 record's canonical copy: its identity keys decide which of the two layouts it has. */
function canonicalCopyV2(record: LogRecordV2) {
  const values = record as unknown as Record<string, unknown>;
  const byRequest = Object.hasOwn(values, 'request_id');
  const byRunItem = Object.hasOwn(values, 'run_id') && Object.hasOwn(values, 'item');
  if (byRequest === byRunItem) throw NOT_THE_SHAPE;
  plainWithKeys(record, byRequest ? 11 : 12);
  for (const key of V2_COMMON_KEYS) if (!Object.hasOwn(values, key)) throw NOT_THE_SHAPE;
  const context = contextCopy(record.context);
  const common = {
    model_version: str(values.model_version),
    policy_id: str(values.policy_id),
    policy_version: str(values.policy_version),
  };
  const result = resultCopy(record.result);
  const tail = {
    salt: str(values.salt),
    schema: str(values.schema),
    scored_at: str(values.scored_at),
    subject: str(values.subject),
  };
  return byRequest
    ? { context, kind: str(values.kind), ...common, request_id: str(values.request_id), result, ...tail }
    : {
        context,
        item: num(values.item),
        kind: str(values.kind),
        ...common,
        result,
        run_id: str(values.run_id),
        ...tail,
      };
}

/** The keys every score-log/2 record has, whatever its kind. */
const V2_COMMON_KEYS = [
  'context',
  'kind',
  'model_version',
  'policy_id',
  'policy_version',
  'result',
  'salt',
  'schema',
  'scored_at',
  'subject',
] as const;

function contextCopy(context: LogRecord['context']): Record<string, unknown> {
  const values = context as unknown as Record<string, unknown>;
  if (!isPlain(values)) throw NOT_THE_SHAPE;
  let own = 0;
  const copy: Record<string, unknown> = {};
  for (const key of CONTEXT_KEYS) {
    if (!Object.hasOwn(values, key)) continue;
    own++;
    const value = values[key];
    if (value === undefined) continue; // JSON leaves out an undefined member
    copy[key] = key === 'jurisdiction' ? str(value) : num(value);
  }
  if (own !== Object.keys(values).length) throw NOT_THE_SHAPE;
  return copy;
}

function resultCopy(result: LogRecord['result'] | Scorecard2Result) {
  const withReasons = isPlain(result) && Object.hasOwn(result, 'reasons');
  plainWithKeys(result, withReasons ? 3 : 2);
  const { levers, scenarios } = result;
  if (!Array.isArray(levers) || !Array.isArray(scenarios)) throw NOT_THE_SHAPE;
  const leverCopies = new Array(levers.length);
  for (let i = 0; i < levers.length; i++) {
    const lever = levers[i];
    plainWithKeys(lever, 4);
    leverCopies[i] = {
      delta: num(lever.delta),
      direction: str(lever.direction),
      name: str(lever.name),
      step: num(lever.step),
    };
  }
  const scenarioCopies = new Array(scenarios.length);
  for (let i = 0; i < scenarios.length; i++) {
    const scenario = scenarios[i];
    plainWithKeys(scenario, 3);
    const { explain } = scenario;
    if (!Array.isArray(explain)) throw NOT_THE_SHAPE;
    for (let j = 0; j < explain.length; j++) str(explain[j]);
    scenarioCopies[i] = { explain, name: str(scenario.name), score: num(scenario.score) };
  }
  if (!withReasons) return { levers: leverCopies, scenarios: scenarioCopies };
  return {
    levers: leverCopies,
    reasons: reasonCopies((result as Scorecard2Result).reasons),
    scenarios: scenarioCopies,
  };
}

/** A scorecard-2 result's reasons, each with its keys in canonical order (`lever` only when present). */
function reasonCopies(reasons: unknown): unknown[] {
  if (!Array.isArray(reasons)) throw NOT_THE_SHAPE;
  const copies = new Array(reasons.length);
  for (let i = 0; i < reasons.length; i++) {
    const reason = reasons[i] as Reason;
    const withLever = isPlain(reason) && Object.hasOwn(reason, 'lever');
    plainWithKeys(reason, withLever ? 6 : 5);
    copies[i] = withLever
      ? {
          code: str(reason.code),
          factor: str(reason.factor),
          lever: str(reason.lever),
          points_below_max: num(reason.points_below_max),
          rank: num(reason.rank),
          statement: str(reason.statement),
        }
      : {
          code: str(reason.code),
          factor: str(reason.factor),
          points_below_max: num(reason.points_below_max),
          rank: num(reason.rank),
          statement: str(reason.statement),
        };
  }
  return copies;
}

/** Checks that a value is a plain object with exactly `count` own enumerable keys. */
function plainWithKeys<T>(value: T | undefined, count: number): asserts value is T {
  if (!isPlain(value) || Object.keys(value).length !== count) throw NOT_THE_SHAPE;
}

function isPlain(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null) return false;
  const prototype = Object.getPrototypeOf(value);
  return prototype === Object.prototype || prototype === null;
}

/** The string itself, when JSON.stringify writes it as JCS does. */
function str(value: unknown): string {
  // A lone surrogate is not Unicode text: RFC 8785 refuses it, so the generic path decides what happens.
  if (typeof value !== 'string' || !(value as WellFormedCheck).isWellFormed()) throw NOT_THE_SHAPE;
  return value;
}

/** The number itself, when JSON can write it. */
function num(value: unknown): number {
  if (typeof value !== 'number' || !Number.isFinite(value)) throw NOT_THE_SHAPE;
  return value;
}
