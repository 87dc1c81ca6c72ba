import { type RequestHandler, Router } from 'express';
import type { Contract } from '../common/contract.js';
import { AppError } from '../errors/app-error.js';
import { docsContentSecurityPolicy } from '../http/security-headers.js';
import { DOCS_PLACEHOLDER_ORIGIN, servedFile } from './served-docs.js';

const methodNotAllowed = () => {
  throw new AppError('method_not_allowed', {
    detail: 'The published contract is read-only; use GET.',
    headers: { Allow: 'GET, HEAD' },
  });
};

/** How the docs are served. */
export interface DocsOptions {
  /** The address the docs show for the server (`PUBLIC_BASE_URL`); by default the contract's own default. */
  publicBaseUrl?: string;
  /** Called each time a file's representation is made (tests count them: once per deployment). */
  onPrepare?: (path: string, representation: 'identity' | 'gzip') => void;
}

/**
 * The published contract, outside authentication: `/docs` (the Redoc reference with the error guide that
 * problem `type`s link to), `/openapi.json` and `/openapi.yaml`. Each is made once, the same for every
 * request: the docs show `publicBaseUrl`, never an address taken from the request.
 */
export function docsRoutes(contract: Contract, options: DocsOptions = {}): RequestHandler {
  const router = Router();
  const { publicBaseUrl } = options;
  const docsHtml = () =>
    publicBaseUrl === undefined
      ? contract.docsHtml
      : contract.docsHtml.replaceAll(DOCS_PLACEHOLDER_ORIGIN, publicBaseUrl);
  const files: [path: string, type: string, body: string | (() => string)][] = [
    ['/docs', 'text/html; charset=utf-8', docsHtml],
    ['/openapi.json', 'application/json', contract.jsonText],
    // RFC 9512 registers application/yaml.
    ['/openapi.yaml', 'application/yaml', contract.yamlText],
  ];
  for (const [path, type, body] of files) {
    // Compressed when asked, with an ETag; the docs page with its own Content-Security-Policy.
    const onPrepare = options.onPrepare;
    router
      .route(path)
      .get(
        servedFile(type, body, {
          ...(path === '/docs' && { contentSecurityPolicy: docsContentSecurityPolicy }),
          ...(onPrepare && { onPrepare: (representation) => onPrepare(path, representation) }),
        }),
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
