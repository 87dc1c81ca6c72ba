import { Router } from 'express';
import type { Contract } from '../contract.js';
import { AppError } from '../errors/app-error.js';
import { docsContentSecurityPolicy } from '../http/security-headers.js';
import { servedFile } from './served-docs.js';

const methodNotAllowed = () => {
  throw new AppError('method_not_allowed', {
    detail: 'The published contract is read-only; use GET.',
    headers: { Allow: 'GET, HEAD' },
  });
};

/**
 * The published contract, outside authentication: `/docs` (the Redoc reference with the error guide that
 * problem `type`s link to), `/openapi.json` and `/openapi.yaml`.
 */
export function docsRoutes(contract: Contract): Router {
  const router = Router();
  const files: [path: string, type: string, body: string][] = [
    ['/docs', 'text/html; charset=utf-8', contract.docsHtml],
    ['/openapi.json', 'application/json', contract.jsonText],
    // RFC 9512 registers application/yaml.
    ['/openapi.yaml', 'application/yaml', contract.yamlText],
  ];
  for (const [path, type, body] of files) {
    // Compressed, with an ETag; the docs show the address of the server that serves them.
    router
      .route(path)
      .get(
        servedFile(
          type,
          body,
          path === '/docs' ? { showOrigin: true, contentSecurityPolicy: docsContentSecurityPolicy } : {},
        ),
      )
      .all(methodNotAllowed);
  }
  return router;
}
