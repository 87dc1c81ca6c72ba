import { readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { describe, expect, it } from 'vitest';

/**
 * patches/ajv+<version>.patch (applied by patch-package on `npm install`) skips ajv's walk of a schema for
 * ids and anchors (`getSchemaRefs`, run by every `addSchema`) when nothing below the schema's root holds one,
 * remembering per object which subtrees hold none. express-openapi-validator adds two schemas per operation,
 * each embedding the whole API document's `paths` and `components`, so the server's start-up (which compiles
 * every operation, see contract-validation.ts) walked the contract twice per operation: about half of its
 * main thread before the patch. These tests fail when an upgrade makes the patch moot (another version is
 * installed: check whether upstream fixed it, then regenerate or drop the patch) or wrong (an id or anchor
 * below the root no longer registers, or a duplicate is no longer refused).
 */
const require = createRequire(import.meta.url);
const ajvRoot = dirname(require.resolve('ajv/package.json'));
const repositoryRoot = join(import.meta.dirname, '../../../..');
const patchFile = readdirSync(join(repositoryRoot, 'patches')).find((name) => name.startsWith('ajv+'));
const { getSchemaRefs } = require('ajv/dist/compile/resolve.js') as {
  getSchemaRefs(this: Ajv2020, schema: object, baseId: string): Record<string, unknown>;
};

describe('the ajv patch', () => {
  it('when ajv is installed, then it is the version the patch was written for, with the change applied', () => {
    const installed = (JSON.parse(readFileSync(join(ajvRoot, 'package.json'), 'utf8')) as { version: string })
      .version;
    expect(patchFile).toBe(`ajv+${installed}.patch`);
    expect(readFileSync(join(ajvRoot, 'dist/compile/resolve.js'), 'utf8')).toContain(
      'if (!childrenHoldIds(schema, schemaId))',
    );
  });

  it('when a large shared document is embedded in many schemas, then it is walked once, not once per schema', () => {
    const ajv = new Ajv2020({ strict: false });
    const components = { schemas: {} as Record<string, unknown> };
    for (let i = 0; i < 2000; i++)
      components.schemas[`S${i}`] = {
        type: 'object',
        properties: { a: { type: 'string' }, b: { type: 'array', items: { type: 'integer' } } },
      };
    let visits = 0;
    const counting = new Proxy(components, {
      ownKeys(target) {
        visits++;
        return Reflect.ownKeys(target);
      },
    });
    for (let i = 0; i < 20; i++)
      ajv.addSchema(
        { components: counting, properties: { body: { $ref: `#/components/schemas/S${i}` } } },
        `op${i}`,
      );
    expect(visits).toBe(1);
    expect(ajv.validate('op3', { body: { a: 'x' } })).toBe(true);
    expect(ajv.validate('op3', { body: { a: 1 } })).toBe(false);
  });

  it('when an id or an anchor is below the root, then it still registers, also beside a subtree already known to hold none', () => {
    const ajv = new Ajv2020({ strict: false });
    const shared = { schemas: { plain: { type: 'string' } } };
    ajv.addSchema({ shared, properties: { a: { $ref: '#/shared/schemas/plain' } } }, 'first');
    const withIds = {
      shared,
      $defs: {
        named: { $anchor: 'named', type: 'integer' },
        other: { $id: 'https://example.test/other', type: 'boolean' },
      },
    };
    getSchemaRefs.call(ajv, withIds, 'https://example.test/root');
    expect(Object.keys((ajv as unknown as { refs: object }).refs)).toEqual(
      expect.arrayContaining(['https://example.test/root#named', 'https://example.test/other']),
    );
    ajv.addSchema(
      { ...withIds, properties: { n: { $ref: '#named' }, o: { $ref: 'https://example.test/other' } } },
      'second',
    );
    expect(ajv.validate('second', { n: 1, o: true })).toBe(true);
    expect(ajv.validate('second', { n: 'x' })).toBe(false);
    expect(ajv.validate('second', { o: 'x' })).toBe(false);
  });

  it('when two different schemas below the root claim one anchor, then it is refused as before', () => {
    const ajv = new Ajv2020({ strict: false });
    const schema = { $defs: { a: { $anchor: 'x', type: 'string' }, b: { $anchor: 'x', type: 'number' } } };
    expect(() => ajv.addSchema(schema, 'ambiguous')).toThrow(/resolves to more than one schema/);
  });
});
