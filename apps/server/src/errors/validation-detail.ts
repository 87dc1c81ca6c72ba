import type { ValidationError } from '@scenario-scoring/api-types';

const LISTED_IN_DETAIL = 3;

/**
 * A detail naming the first few problems, e.g. `The request has 1 invalid field: /body/subject must …`;
 * `count` when there are more problems than `errors` lists.
 */
export function validationDetail(errors: readonly ValidationError[], count = errors.length): string {
  const listed = errors
    .slice(0, LISTED_IN_DETAIL)
    .map((e) => `${e.path} ${e.message}`)
    .join('; ');
  const more = count > LISTED_IN_DETAIL ? `; and ${count - LISTED_IN_DETAIL} more` : '';
  return `The request has ${count} invalid field${count === 1 ? '' : 's'}: ${listed}${more}.`;
}
