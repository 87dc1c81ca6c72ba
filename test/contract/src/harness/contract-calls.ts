import type { ScoreRequest, ScoringClient } from '@scenario-scoring/client';
import { expect } from 'vitest';
import { rawBody } from './contract-client.js';
import { type ContractOperation, expectDocumentedResponse } from './contract-validator.js';
import { type DocumentedAnswer, preferHeader } from './documented-answer.js';
import type { Target } from './targets.js';

export const SCORE_OPERATION = {
  path: '/v1/scoring/score',
  method: 'post',
} as const satisfies ContractOperation;
export const POLICY_OPERATION = {
  path: '/v1/scoring/policies/{jurisdiction}',
  method: 'get',
} as const satisfies ContractOperation;
export const LOG_OPERATION = { path: '/v1/logs/{cid}', method: 'get' } as const satisfies ContractOperation;

/** A body to send: a value serialised as JSON, `raw` text sent as it is, or none at all. */
export type Body = { json: unknown } | { raw: string } | { none: true };

function bodyOptions(body: Body) {
  if ('raw' in body) return rawBody(body.raw);
  return { body: ('json' in body ? body.json : undefined) as ScoreRequest };
}

/**
 * `POST /v1/scoring/score`, asking Prism for `answer`; asserts the status is the documented answer's and
 * that the response is one the contract documents.
 */
export async function postScore(
  client: ScoringClient,
  body: Body,
  answer: DocumentedAnswer,
  headers: Record<string, string> = {},
) {
  const result = await client.POST('/v1/scoring/score', {
    ...bodyOptions(body),
    headers: { ...preferHeader(answer), ...headers },
  });
  expect(result.response.status, JSON.stringify(result.error)).toBe(answer.status);
  expectDocumentedResponse(SCORE_OPERATION, result.response, result.data ?? result.error);
  return result;
}

/** `GET /v1/scoring/policies/{jurisdiction}`, asking Prism for `answer`, checked like {@link postScore}. */
export async function getPolicy(
  client: ScoringClient,
  jurisdiction: string,
  answer: DocumentedAnswer,
  headers: Record<string, string> = {},
) {
  const result = await client.GET('/v1/scoring/policies/{jurisdiction}', {
    params: { path: { jurisdiction } },
    headers: { ...preferHeader(answer), ...headers },
  });
  expect(result.response.status, JSON.stringify(result.error)).toBe(answer.status);
  expectDocumentedResponse(POLICY_OPERATION, result.response, result.data ?? result.error);
  return result;
}

/** `GET /v1/logs/{cid}` as raw bytes, asking Prism for `answer`, checked like {@link postScore}. */
export async function getLog(client: ScoringClient, cid: string, answer: DocumentedAnswer) {
  const result = await client.GET('/v1/logs/{cid}', {
    params: { path: { cid } },
    parseAs: 'arrayBuffer',
    headers: preferHeader(answer),
  });
  expect(result.response.status, JSON.stringify(result.error)).toBe(answer.status);
  const body = result.data === undefined ? result.error : JSON.parse(new TextDecoder().decode(result.data));
  expectDocumentedResponse(LOG_OPERATION, result.response, body);
  return result;
}

/** What every openapi-fetch call returns. */
export interface CallResult {
  response: Response;
  data?: unknown;
  error?: unknown;
}

/**
 * Asserts that a call got the documented `answer` (asked of Prism with {@link preferHeader}; the server
 * must give it by itself) and that the response is one the contract documents for `operation`.
 */
export function expectAnswer<R extends CallResult>(
  operation: ContractOperation,
  result: R,
  answer: DocumentedAnswer,
): R {
  expect(result.response.status, JSON.stringify(result.error)).toBe(answer.status);
  expectDocumentedResponse(operation, result.response, result.data ?? result.error);
  return result;
}

/** What a problem must say beyond its documented shape. */
export interface ExpectedProblem {
  code: string;
  /** Every path the server's `errors` name, in any order; the detail must name one of them. */
  paths?: string[];
  /** Text the server's `detail` must contain. */
  detail?: string | RegExp;
  /** The request path the server's `instance` must be. */
  instance?: string;
}

/**
 * Asserts a problem's code on every target and, on the server, what the mock's static example cannot
 * know: the exact fields at fault, the detail and the instance.
 */
export function expectProblem(target: Target, error: unknown, expected: ExpectedProblem): void {
  const problem = error as { code: string; detail: string; instance?: string; errors?: { path: string }[] };
  expect(problem.code).toBe(expected.code);
  if (expected.code === 'validation_failed') expect(problem.errors?.length).toBeGreaterThan(0);
  // The mock names the fields of an invalid request as the server does (its front translates Prism's
  // violations); only the server computes the other problems, so only its details are checked.
  if (expected.paths) {
    const named = [...new Set(problem.errors?.map((e) => e.path))];
    expect(named.sort(), problem.detail).toEqual([...expected.paths].sort());
    expect(
      expected.paths.some((path) => problem.detail.includes(path)),
      problem.detail,
    ).toBe(true);
  }
  if (target.kind !== 'server') return;
  if (typeof expected.detail === 'string') expect(problem.detail).toContain(expected.detail);
  else if (expected.detail) expect(problem.detail).toMatch(expected.detail);
  if (expected.instance) expect(problem.instance).toBe(expected.instance);
}
