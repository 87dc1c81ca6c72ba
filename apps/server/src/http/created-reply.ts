import type { Response } from 'express';

/**
 * Replies to a create (`idempotency/idempotent-create.ts`'s result): `status` with `Location`, plus
 * `Idempotent-Replayed: true` when it is an earlier request's, and the body's JSON bytes as they were
 * first sent, so a replay is byte for byte the first response.
 */
export function replyCreated(
  res: Response,
  status: 201 | 202,
  location: string,
  created: { bodyJson: string; replayed: boolean },
): void {
  res.status(status).set('Location', location);
  if (created.replayed) res.set('Idempotent-Replayed', 'true');
  res.type('application/json').send(created.bodyJson);
}
