/**
 * Express 5 with `express.json()` and express-openapi-validator on the bundled contract, answering
 * `BARE_BODY`: the design card's stack with nothing of the server's own (no authentication, scoring or
 * log). The validator is configured as the server configures it (apps/server/src/http/contract-validation.ts:
 * every request error collected, responses not validated, security left to the server, undocumented routes
 * refused) and warmed by the bench's first request. By default it is the installed validator, with this
 * checkout's patch (patches/express-openapi-validator+5.6.2.patch); `VALIDATOR_DIR` names another copy of
 * the package, e.g. the stock one bench/score makes by taking the patch out. Issue 29's hot-path goal is
 * the server at ≥ 1.0 × the stock stack.
 */
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import express from 'express';
import * as installed from 'express-openapi-validator';

const OpenApiValidator: typeof installed =
  process.env.VALIDATOR_DIR === undefined
    ? installed
    : (
        (await import(pathToFileURL(join(process.env.VALIDATOR_DIR, 'dist/index.js')).href)) as {
          default: typeof installed;
        }
      ).default;
const body = process.env.BARE_BODY ?? '{}';
const ROOT = new URL('../../', import.meta.url).pathname;
const app = express();
app.get('/readyz', (_req, res) => {
  res.send('ok');
});
app.use(express.json({ strict: false, type: 'application/json' }));
app.use(
  OpenApiValidator.middleware({
    apiSpec: join(ROOT, 'openapi/dist/openapi.yaml'),
    validateApiSpec: false,
    validateRequests: { allErrors: true },
    validateResponses: false,
    validateSecurity: false,
    ignoreUndocumented: false,
    fileUploader: false,
  }),
);
app.post('/v1/scoring/score', (_req, res) => {
  res.type('application/json').send(body);
});
app.use(((error, _req, res, _next) => {
  const status = (error as { status?: number }).status ?? 500;
  res
    .status(status)
    .type('application/problem+json')
    .send(JSON.stringify({ status, detail: String(error) }));
}) as express.ErrorRequestHandler);
const server = app.listen(Number(process.env.PORT), '127.0.0.1');
server.keepAliveTimeout = 65_000;
process.on('SIGTERM', () => server.close(() => process.exit(0)));
