import { readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import { dirname, join } from 'node:path';
import { parse } from 'node:url';
import express from 'express';
import * as OpenApiValidator from 'express-openapi-validator';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadContract } from '../common/contract.js';

/**
 * patches/express-openapi-validator+<version>.patch (applied by patch-package on `npm install`) removes
 * per-request costs of the validator: walking and keying every route of the document on every request (a
 * route table built once instead), a promise turn per middleware once the spec is loaded, and calling the
 * deprecated `url.parse` (which walks the stack each time, and warns DEP0169 on every server's start, whose
 * warm-up sends a query) where the query it gives is written out (`legacyQuery`); and two start-up
 * costs: compiling the OpenAPI schema even when `validateApiSpec` is false (a production start, see
 * contract-validation.ts), and compiling every component schema in the schema preprocessor only to read
 * the schema back. One change is not about cost: a bracketed query key that `qs` will not set
 * (`cursor[__proto__]=b`) stood for nothing and was dropped; it stands for an empty object, so it is refused
 * as `cursor[a]=b` is (tested in app.test.ts). Nor is the path of an error about a named member: the name is
 * written as a JSON Pointer token (`a/b` as `a~1b`, as ajv writes every other path), and an empty name is a
 * member too, not none (tested in unknown-members.test.ts). Nor is the listing of unknown (or empty) query
 * parameters: they were thrown at the first one, before anything else was validated, and are now listed with
 * every other problem of the request (tested in app.test.ts). These tests fail when an upgrade makes the patch moot (another version is installed:
 * check whether upstream fixed it, then regenerate or drop the patch) or wrong (it is not applied, or the
 * patched validator matches routes, path parameters or queries differently).
 */
const require = createRequire(import.meta.url);
const validatorRoot = dirname(dirname(require.resolve('express-openapi-validator/package.json')));
const packageRoot = join(validatorRoot, 'express-openapi-validator');
const repositoryRoot = join(import.meta.dirname, '../../../..');
const patchFile = readdirSync(join(repositoryRoot, 'patches')).find((name) =>
  name.startsWith('express-openapi-validator+'),
);
const source = (file: string) => readFileSync(join(packageRoot, 'dist/middlewares', file), 'utf8');

describe('the express-openapi-validator patch', () => {
  it('when the validator is installed, then it is the version the patch was written for', () => {
    const installed = (
      JSON.parse(readFileSync(join(packageRoot, 'package.json'), 'utf8')) as { version: string }
    ).version;
    expect(patchFile).toBe(`express-openapi-validator+${installed}.patch`);
  });

  it('when installed, then every change is applied', () => {
    expect(readFileSync(join(packageRoot, 'dist/openapi.validator.js'), 'utf8')).toContain(
      'return withContext(next, ({ context: { apiDoc } }) => {',
    );
    expect(source('openapi.metadata.js')).toContain(
      'for (const { expressRoute, openApiRoute, pathKey, regexp, paramKeys } of routeTable(pathOpts)) {',
    );
    expect(source('parsers/req.parameter.mutator.js')).toContain(
      'this.parseQueryStringUndecoded(legacyQuery(req.originalUrl))',
    );
    expect(source('parsers/req.parameter.mutator.js')).not.toContain('require("url")');
    expect(source('parsers/req.parameter.mutator.js')).toContain(
      'this.resolvedParameters(parameters || []).forEach(({ parameter, name, schema }) => {',
    );
    // The OpenAPI schema's validator is built inside `if (validateApiSpec)`, not before it.
    const framework = readFileSync(join(packageRoot, 'dist/framework/index.js'), 'utf8');
    expect(framework).toMatch(/if \(validateApiSpec\) \{\s*(\/\/[^\n]*\s*)*const validator = new/);
    expect(source('parsers/schema.preprocessor.js')).toContain(
      'let res = (ref ? this.addedSchema(ref) : schema);',
    );
  });

  it('when the preprocessor reads a component schema, then it is the one getSchema would compile to read', () => {
    const { SchemaPreprocessor } = require(
      join(packageRoot, 'dist/middlewares/parsers/schema.preprocessor.js'),
    );
    const document = structuredClone(loadContract().document) as unknown as {
      components: { schemas: Record<string, unknown> };
    };
    const preprocessor = new SchemaPreprocessor(
      document,
      { formats: {}, serDesMap: {}, validateFormats: false },
      false,
    );
    const refs = Object.keys(document.components.schemas).map((name) => `#/components/schemas/${name}`);
    expect(refs.length).toBeGreaterThan(10);
    for (const ref of refs) {
      const read = preprocessor.addedSchema(ref);
      expect(read, ref).toBeDefined();
      expect(read, ref).toBe(preprocessor.ajv.getSchema(ref).schema);
    }
  });

  it('when a request has a query, then legacyQuery gives what url.parse gave, on any path', () => {
    const { legacyQuery } = require(
      join(packageRoot, 'dist/middlewares/parsers/req.parameter.mutator.js'),
    ) as {
      legacyQuery: (path: string) => string | null;
    };
    const urlParse = (path: string) => {
      try {
        return parse(path).query ?? null;
      } catch {
        return 'url.parse threw';
      }
    };
    // Every character url.parse treats specially: its split and host characters, the ones it escapes on
    // its slow path, and what it or its fast path's \s counts as whitespace.
    const special = [...'?#@/\\&=%\'"<>^`{|}:[]!$()*+,;~ \t\n\r\v\f\u0001\u00a0\u2028\ufeffaé'];
    fc.assert(
      fc.property(fc.array(fc.constantFrom(...special), { maxLength: 14 }), (tail) => {
        const path = `/items/xy${tail.join('')}`;
        expect(legacyQuery(path)).toBe(urlParse(path));
      }),
      { numRuns: 20_000 },
    );
    for (const path of [
      '/items/xy',
      '/items/xy?',
      "/items/xy?a='1'",
      "/items/xy?a='1'#f",
      '/a@b?c=<',
      '/a#b?c',
    ])
      expect(legacyQuery(path)).toBe(urlParse(path));
  });

  describe('when the document is malformed', () => {
    // An `info` without its required `title`: refused only by the check of the document.
    const malformed = {
      openapi: '3.1.0',
      info: { version: '1' },
      paths: { '/items': { get: { responses: { 200: { description: 'ok' } } } } },
    };
    const firstAnswer = async (validateApiSpec: boolean) => {
      const app = express();
      app.use(OpenApiValidator.middleware({ apiSpec: malformed as never, validateApiSpec }));
      app.get('/items', (_req, res) => {
        res.json({ items: [] });
      });
      app.use(((error, _req, res, _next) => {
        res.status(500).json({ message: error.message });
      }) as express.ErrorRequestHandler);
      const server = app.listen(0, '127.0.0.1');
      await new Promise((resolve) => server.once('listening', resolve));
      try {
        const response = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/items`);
        return { status: response.status, body: await response.json() };
      } finally {
        server.close();
      }
    };

    it('then the validator still refuses it with validateApiSpec, and serves without', async () => {
      const logged = console.error;
      console.error = () => {};
      try {
        expect(await firstAnswer(true)).toEqual({
          status: 500,
          body: { message: 'openapi.validator: args.apiDoc was invalid.  See the output.' },
        });
      } finally {
        console.error = logged;
      }
      expect(await firstAnswer(false)).toEqual({ status: 200, body: { items: [] } });
    });
  });

  describe('when the patched validator serves requests', () => {
    const spec = {
      openapi: '3.1.0',
      info: { title: 'patch check', version: '1' },
      paths: {
        '/items/{id}': {
          get: {
            parameters: [
              { name: 'id', in: 'path', required: true, schema: { type: 'string', minLength: 2 } },
              { name: 'limit', in: 'query', schema: { type: 'integer', maximum: 10 } },
            ],
            responses: { 200: { description: 'ok' } },
          },
        },
        '/items': { post: { responses: { 200: { description: 'ok' } } } },
        '/tags': {
          get: {
            parameters: [
              { $ref: '#/components/parameters/Mode' },
              {
                name: 'X-Tags',
                in: 'header',
                style: 'simple',
                schema: { type: 'array', items: { type: 'string', maxLength: 3 } },
              },
              { name: 'pick', in: 'query', schema: { type: 'array', items: { type: 'integer' } } },
            ],
            responses: { 200: { description: 'ok' } },
          },
        },
      },
      components: {
        parameters: {
          Mode: { name: 'X-Mode', in: 'header', schema: { type: 'string', enum: ['fast', 'slow'] } },
        },
      },
    };
    let base = '';
    let close = () => {};
    beforeAll(async () => {
      const app = express();
      app.use(
        OpenApiValidator.middleware({
          apiSpec: spec as never,
          validateRequests: { allErrors: true },
          validateResponses: false,
        }),
      );
      app.get('/items/:id', (req, res) => {
        res.json({ params: req.params, query: req.query });
      });
      app.get('/tags', (req, res) => {
        res.json({
          mode: req.headers['x-mode'] ?? null,
          tags: req.headers['x-tags'] ?? null,
          query: req.query,
        });
      });
      app.use(((error, _req, res, _next) => {
        res.status(error.status ?? 500).json({ status: error.status, message: error.message });
      }) as express.ErrorRequestHandler);
      const server = app.listen(0, '127.0.0.1');
      await new Promise((resolve) => server.once('listening', resolve));
      base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      close = () => server.close();
    });
    afterAll(() => close());

    const get = async (path: string, method = 'GET', headers: Record<string, string> = {}) => {
      const response = await fetch(base + path, { method, headers });
      return { status: response.status, body: await response.json() };
    };

    it('then routes, decoded path parameters and queries are matched on every request as before', async () => {
      for (let i = 0; i < 3; i++) {
        expect(await get('/items/a%20b?limit=3')).toEqual({
          status: 200,
          body: { params: { id: 'a b' }, query: { limit: 3 } },
        });
        expect(await get('/items/xy')).toEqual({ status: 200, body: { params: { id: 'xy' }, query: {} } });
      }
    });

    // The route's parameters are resolved once (resolvedParameters): a header parameter the mutator acts on
    // (an array) is still split on every request, a scalar header (by $ref) still validated, a query array
    // still exploded.
    it('then header and query parameters are parsed and checked on every request as before', async () => {
      for (let i = 0; i < 3; i++) {
        expect(await get('/tags?pick=1&pick=2', 'GET', { 'x-mode': 'fast', 'x-tags': 'a,bc' })).toEqual({
          status: 200,
          body: { mode: 'fast', tags: ['a', 'bc'], query: { pick: [1, 2] } },
        });
        expect(await get('/tags')).toEqual({ status: 200, body: { mode: null, tags: null, query: {} } });
        expect((await get('/tags', 'GET', { 'x-mode': 'quick' })).status).toBe(400);
        expect((await get('/tags', 'GET', { 'x-tags': 'a,long' })).status).toBe(400);
        expect((await get('/tags?pick=x')).status).toBe(400);
      }
    });

    it('then bad parameters, reserved characters, unknown paths and methods are refused as before', async () => {
      expect((await get('/items/x')).status).toBe(400);
      expect((await get('/items/xy?limit=11')).status).toBe(400);
      expect((await get('/items/xy?limit=1:')).status).toBe(400);
      expect((await get('/items/%E0%A4%A')).status).toBe(400);
      expect((await get('/nothing')).status).toBe(404);
      expect((await get('/items', 'GET')).status).toBe(405);
    });
  });
});
