import { isUtf8 } from 'node:buffer';
import type { ScoreRequest, ValidationError } from '@scenario-scoring/api-types';
import type { ErrorObject } from 'ajv';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import type { OpenApiDocument } from '../common/contract.js';
import { AppError } from '../errors/app-error.js';
import { MAX_PROBLEM_ERRORS, problem } from '../errors/problem.js';
import { validationDetail } from '../errors/validation-detail.js';
import { shapeBuilder, shapeViolations, UNKNOWN_MEMBER } from '../http/unknown-members.js';
import { scoringPolicy, type UnknownJurisdictionMode } from '../policies/scoring-policy.js';
import {
  firstDuplicateMember,
  MAX_NESTING,
  memberNameCount,
  nestsDeeperThan,
  parsedMemberCount,
} from '../transport/duplicate-members.js';
import { jsonSyntaxErrorMessage } from '../transport/json-syntax-error.js';
import { collectTextViolations, pointerToken } from '../transport/text-policy.js';

/** A line of an NDJSON run as stored (`run_inputs` without its run and index): the item, or why it fails. */
export interface RunLine {
  subject: string | null;
  /** The item as validated (compact JSON), or null when it fails. */
  item: string | null;
  /** The problem (JSON) its item fails with, or null. */
  error: string | null;
}

/** Reads one NDJSON line (its bytes without the newline) as the `line`-th (1-based) line of a run. */
export type LineReader = (bytes: Buffer, line: number) => RunLine;

const CONTRACT_ID = 'https://contract.invalid/openapi.json';

/**
 * The reader of a run's NDJSON lines, which states the rule for a line (docs: README, the contract):
 * a line (a trailing `\r` ignored) is an item exactly like the body of `POST /v1/scoring/score`, checked
 * against the contract's `ScoreRequest` schema; one that is not valid UTF-8 or not JSON (an empty line
 * included) fails with `malformed_json`, one that does not match the schema with `validation_failed` (every
 * problem counted, the first hundred listed, paths under `/line/{n}`), one longer than `maxLineBytes` with `payload_too_large` (the
 * splitter passes only its first bytes and `overlong`), and with `unknownJurisdiction: 'refuse'` a
 * jurisdiction without a policy of its own with `unknown_jurisdiction`. A failing line keeps its subject
 * when it has a valid one.
 */
export function lineReader(
  document: OpenApiDocument,
  unknownJurisdiction: UnknownJurisdictionMode,
): (bytes: Buffer, line: number, overlong?: number) => RunLine {
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  addFormats.default(ajv);
  ajv.addSchema({ $id: CONTRACT_ID, components: document.components });
  const validItem = ajv.getSchema(`${CONTRACT_ID}#/components/schemas/ScoreRequest`);
  const validSubject = ajv.getSchema(`${CONTRACT_ID}#/components/schemas/Subject`);
  if (!validItem || !validSubject) throw new Error('the contract has no ScoreRequest schema');
  const itemShape = shapeBuilder(document)({ $ref: '#/components/schemas/ScoreRequest' });
  const subjectOf = (value: unknown): string | null => {
    const subject = (value as { subject?: unknown } | null)?.subject;
    return typeof subject === 'string' && validSubject(subject) ? subject : null;
  };
  const fail = (subject: string | null, error: ReturnType<typeof problem>): RunLine => ({
    subject,
    item: null,
    error: JSON.stringify(error),
  });
  /** The line fails `validation_failed` with `errors` (the first of `count` problems when more were found). */
  const invalid = (subject: string | null, line: number, errors: ValidationError[], count = errors.length) =>
    fail(
      subject,
      problem('validation_failed', {
        detail: `Line ${line} is not a valid item. ${validationDetail(errors, count)}`,
        errors,
      }),
    );
  return (bytes, line, overlong) => {
    if (overlong !== undefined) {
      return fail(
        null,
        problem('payload_too_large', { detail: `Line ${line} is longer than ${overlong} bytes.` }),
      );
    }
    const end = bytes.length > 0 && bytes[bytes.length - 1] === 0x0d ? bytes.length - 1 : bytes.length;
    const text = bytes.subarray(0, end);
    if (!isUtf8(text))
      return fail(null, problem('malformed_json', { detail: `Line ${line} is not valid UTF-8.` }));
    if (nestsDeeperThan(text, MAX_NESTING)) {
      return invalid(null, line, [
        { path: `/line/${line}`, message: `must not nest deeper than ${MAX_NESTING} levels` },
      ]);
    }
    let value: unknown;
    const json = text.toString('utf8');
    try {
      value = JSON.parse(json);
    } catch (error) {
      // Never V8's message as it is: for an unexpected token it quotes the line (personal data), which the
      // run's results would keep.
      const detail =
        text.length === 0
          ? `Line ${line} is empty.`
          : `Line ${line} is not JSON: ${jsonSyntaxErrorMessage((error as Error).message, json)}`;
      return fail(null, problem('malformed_json', { detail }));
    }
    // The rules a JSON body is held to (transport/json-body.ts, text-policy.ts): no member named twice (JSON.parse
    // keeps the last, another reader the first), no lone surrogate or NUL in any string or key.
    // Walked only when the names in the text outnumber the parsed members (as json-body.ts does): the walk
    // makes a string of every name, 3 ms for a 64 KB line of 6,500 members.
    const duplicate =
      memberNameCount(text) === parsedMemberCount(value) ? undefined : firstDuplicateMember(text);
    if (duplicate !== undefined) {
      const detail = `Line ${line} names the member ${JSON.stringify(duplicate.name.slice(0, 100))} twice in one object (/line/${line}${duplicate.pointer.slice(0, 200)}); send each member once.`;
      return fail(null, problem('malformed_json', { detail }));
    }
    const textErrors: ValidationError[] = [];
    collectTextViolations(value, `/line/${line}`, textErrors);
    if (textErrors.length > 0) return invalid(null, line, textErrors);
    // More unknown members than a problem lists fail the line before the validator, which would make an
    // error object for each (a 64 KB line of 6,500 of them took 18 ms of the event loop).
    const found = shapeViolations(value, itemShape);
    if (found.unknownCount > MAX_PROBLEM_ERRORS) {
      const errors = found.unknown.map(({ at, name }) => ({
        path: `/line/${line}${at}/${pointerToken(name)}`,
        message: UNKNOWN_MEMBER,
      }));
      return invalid(subjectOf(value), line, errors, found.unknownCount);
    }
    if (!validItem(value)) {
      const all = validItem.errors ?? [];
      // As a JSON body's errors are written (the validator's): an unknown member's path names it.
      const errors = all.slice(0, MAX_PROBLEM_ERRORS).map((e: ErrorObject) =>
        e.keyword === 'additionalProperties'
          ? {
              path: `/line/${line}${e.instancePath}/${pointerToken(String(e.params.additionalProperty))}`,
              message: UNKNOWN_MEMBER,
            }
          : { path: `/line/${line}${e.instancePath}`, message: e.message ?? 'is invalid' },
      );
      return invalid(subjectOf(value), line, errors, all.length);
    }
    const item = value as ScoreRequest;
    try {
      scoringPolicy(item.context.jurisdiction, unknownJurisdiction);
    } catch (error) {
      if (!(error instanceof AppError)) throw error;
      return fail(item.subject, problem(error.code, { detail: `Line ${line}: ${error.detail}` }));
    }
    return { subject: item.subject, item: JSON.stringify(item), error: null };
  };
}
