import type { RequestHandler } from 'express';
import { AppError } from '../errors/app-error.js';

/** The request Content-Encodings the contract declares: the body parser inflates gzip itself. */
export const ACCEPTED_CONTENT_ENCODINGS: readonly string[] = ['identity', 'gzip'];

/** Whether a body is sent as it is to be parsed (no Content-Encoding, or `identity`). */
export function isIdentityEncoded(headers: { 'content-encoding'?: string | undefined }): boolean {
  const encoding = headers['content-encoding'];
  return encoding === undefined || encoding.trim().toLowerCase() === 'identity';
}

/**
 * Refuses, before anything reads the body, a Content-Encoding the contract does not declare (`br`,
 * `deflate`, `zstd`, a chain such as `gzip, gzip`…) with 415, naming it. Only one coding is accepted:
 * a chain would let a small body inflate in stages.
 */
export const requireDeclaredContentEncoding: RequestHandler = (req, _res, next) => {
  const header = req.headers['content-encoding'];
  if (header === undefined) return next();
  const codings = header
    .split(',')
    .map((coding) => coding.trim().toLowerCase())
    .filter((coding) => coding !== '');
  const refused =
    codings.length > 1 || codings.some((coding) => !ACCEPTED_CONTENT_ENCODINGS.includes(coding));
  if (refused) {
    throw new AppError('unsupported_media_type', {
      detail: `The body's Content-Encoding "${header.slice(0, 100)}" is not supported; send it as identity (uncompressed) or gzip.`,
    });
  }
  next();
};

/**
 * The AppError for a body that its declared encoding cannot decode (a corrupt or truncated gzip stream):
 * zlib's errors carry a `Z_…` code (or `ERR_…ZLIB…`/`ERR__…` for brotli), which is the client's fault.
 */
export function fromDecompression(error: object): AppError | undefined {
  const { code, message } = error as { code?: unknown; message?: unknown };
  if (
    typeof code !== 'string' ||
    !(code.startsWith('Z_') || code.includes('ZLIB') || code.startsWith('ERR__'))
  )
    return undefined;
  return new AppError('malformed_json', {
    detail: `The body could not be decompressed as its Content-Encoding says: ${String(message).slice(0, 200)}.`,
  });
}
