import { createRequire } from 'node:module';
import { parse as parseUrl } from 'node:url';

type PathToRegexp = (path: string, options?: Record<string, unknown>) => unknown;

const MAX_CACHED_ROUTES = 1000;
let installed = false;

/**
 * Removes two per-request costs of express-openapi-validator 5.6.2 without changing what it does. Together
 * they were about a sixth of a scoring's CPU time. Idempotent.
 *
 * 1. Its route lookup compiles a path-to-regexp matcher for every contract path on every request
 *    (`openapi.metadata.js`). The result depends only on the path and the two routing flags it passes, so
 *    those calls are served from a cache. Express's router matches with `match`, not this export, and
 *    calls with other options are passed through.
 * 2. It calls the deprecated `url.parse` on every request, and Node walks the stack on each call to decide
 *    whether to warn (it never warns for code in node_modules). One silenced call from here settles that,
 *    after which `url.parse` costs a tenth. The server itself never uses `url.parse`.
 */
export function speedUpValidatorHotPath(): void {
  if (installed) return;
  installed = true;
  cacheRouteRegexps();
  const noDeprecation = process.noDeprecation;
  process.noDeprecation = true;
  parseUrl('/');
  process.noDeprecation = noDeprecation;
}

function cacheRouteRegexps(): void {
  const validatorRequire = createRequire(createRequire(import.meta.url).resolve('express-openapi-validator'));
  const module = validatorRequire('path-to-regexp') as { pathToRegexp: PathToRegexp };
  const original = module.pathToRegexp;
  // Per path, one slot per combination of the two flags.
  const cache = new Map<string, unknown[]>();
  module.pathToRegexp = (path, options) => {
    const onlyFlags =
      options !== undefined &&
      options.end === undefined &&
      options.trailing === undefined &&
      options.delimiter === undefined;
    if (typeof path !== 'string' || !onlyFlags) return original(path, options);
    let compiled = cache.get(path);
    if (compiled === undefined) {
      if (cache.size >= MAX_CACHED_ROUTES) return original(path, options);
      compiled = [];
      cache.set(path, compiled);
    }
    const slot = (options.sensitive === true ? 2 : 0) + (options.strict === true ? 1 : 0);
    compiled[slot] ??= original(path, options);
    return compiled[slot];
  };
}
