import { type RequestHandler, Router } from 'express';
import type { Contract } from '../common/contract.js';
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
export function docsRoutes(contract: Contract): RequestHandler {
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
  // Only the three paths enter the router (matched as Express matches them: any case, one trailing
  // slash allowed); every other request passes on at the cost of one lookup.
  const paths = new Set(files.map(([path]) => path));
  return (req, res, next) => {
    const path = req.path.toLowerCase();
    if (paths.has(path.endsWith('/') ? path.slice(0, -1) : path)) router(req, res, next);
    else next();
  };
}
