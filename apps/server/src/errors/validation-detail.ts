import type { ValidationError } from '@scenario-scoring/api-types';

const LISTED_IN_DETAIL = 3;

/**
 * A detail naming the first few problems, e.g. `The request has 1 invalid field: /body/subject must …`,
 * counting fields (a field with two problems is one invalid field, its two problems both listed) and
 * saying how many problems are not listed. `count` when there are more problems than `errors` holds (each
 * of them a field of its own: the unknown members past the ones listed).
 */
export function validationDetail(errors: readonly ValidationError[], count?: number): string {
  const problems = count ?? errors.length;
  const fields = count ?? new Set(errors.map((e) => e.path)).size;
  const shown = errors.slice(0, LISTED_IN_DETAIL);
  const listed = shown.map((e) => `${e.path} ${e.message}`).join('; ');
  const more = problems > shown.length ? `; and ${problems - shown.length} more` : '';
  return `The request has ${fields} invalid field${fields === 1 ? '' : 's'}: ${listed}${more}.`;
}
