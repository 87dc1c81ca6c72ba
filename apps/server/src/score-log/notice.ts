import type { Notice } from '@scenario-scoring/api-types';
import {
  catalogModel,
  isModelVersion,
  type ReasonCode,
  type ReasonLanguage,
  reasonStatement,
} from '@scenario-scoring/engine';
import { AppError } from '../errors/app-error.js';

/** Says the wording is illustrative, in each language. */
export const NOTICE_DISCLAIMER: Readonly<Record<ReasonLanguage, string>> = {
  en: 'Illustrative wording, not legal advice.',
  de: 'Beispielhafte Formulierung, keine Rechtsberatung.',
};

/** The part of a score-log/2 record a notice reads. */
interface RecordForNotice {
  schema?: unknown;
  scored_at?: string;
  model_version?: string;
  policy_id?: string;
  policy_version?: string;
  result?: {
    scenarios?: { name: string; score: number }[];
    reasons?: { rank: number; code: ReasonCode }[];
  };
}

/**
 * The notice of a log record (its exact stored bytes): the p50 score on its range, when and by which model
 * and policy it was scored, and its reasons in rank order, their statements in `language` from the catalog
 * of the version that scored it (the codes are what the record commits; the statements are the catalog's).
 * A record without reasons (scorecard-1, in either record form) answers 422 `notice_unavailable`: reasons
 * cannot be given to a score afterwards, by another model than the one that made it.
 */
export function noticeOf(cid: string, bytes: Uint8Array, language: ReasonLanguage): Notice {
  const record = JSON.parse(new TextDecoder().decode(bytes)) as RecordForNotice;
  const version = record.model_version ?? '';
  const model = isModelVersion(version) ? catalogModel(version) : undefined;
  const reasons = record.result?.reasons;
  const p50 = record.result?.scenarios?.find((s) => s.name === 'p50');
  if (
    record.schema !== 'score-log/2' ||
    !isModelVersion(version) ||
    model?.reason_method == null ||
    reasons === undefined ||
    p50 === undefined
  ) {
    throw new AppError('notice_unavailable', {
      detail: `The record ${cid} was scored by ${version || 'a model'}, which gives no reasons; only records of scorecard-2 or later have a notice.`,
    });
  }
  return {
    log_cid: cid,
    language,
    score: p50.score,
    score_range: { min: 0, max: 1000 },
    scored_at: record.scored_at as string,
    model_version: version,
    policy_id: record.policy_id as string,
    policy_version: record.policy_version as string,
    reasons: reasons.map(({ rank, code }) => ({
      rank,
      code,
      statement: reasonStatement(version, code, language),
    })),
    disclaimer: NOTICE_DISCLAIMER[language],
  };
}
