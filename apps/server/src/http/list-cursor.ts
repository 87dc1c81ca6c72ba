import { AppError } from '../errors/app-error.js';
import { validationDetail } from '../errors/validation-detail.js';
import { DEFAULT_PAGE_LIMIT, decodeCursor, type PageRequest } from '../storage/paging.js';

/**
 * Reads `?limit=&cursor=` of a list of `idPrefix` ids (checked against the contract, `limit` coerced by
 * the route adapter) into the page to read. A cursor this server did not make is 400 `validation_failed`
 * naming `/query/cursor`.
 */
export function readPageRequest(query: { limit?: number; cursor?: string }, idPrefix: string): PageRequest {
  const limit = query.limit ?? DEFAULT_PAGE_LIMIT;
  if (query.cursor === undefined) return { limit, before: undefined };
  const before = decodeCursor(query.cursor, idPrefix);
  if (before === undefined) {
    const errors = [
      {
        path: '/query/cursor',
        message: 'is not a cursor of this list; pass the next_cursor of the previous page',
      },
    ];
    throw new AppError('validation_failed', { detail: validationDetail(errors), errors });
  }
  return { limit, before };
}
