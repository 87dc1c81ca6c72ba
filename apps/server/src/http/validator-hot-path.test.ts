import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import { speedUpValidatorHotPath } from './validator-hot-path.js';

type PathToRegexp = (path: string, options?: object) => { regexp: RegExp; keys: { name: string }[] };
const validatorRequire = createRequire(createRequire(import.meta.url).resolve('express-openapi-validator'));
const pathToRegexpModule = validatorRequire('path-to-regexp') as { pathToRegexp: PathToRegexp };

describe('speedUpValidatorHotPath', () => {
  speedUpValidatorHotPath();
  const { pathToRegexp } = pathToRegexpModule;

  it("compiles the validator's route matchers once per path and flags", () => {
    const first = pathToRegexp('/v1/logs/:cid', { sensitive: false, strict: false });
    expect(pathToRegexp('/v1/logs/:cid', { sensitive: false, strict: false })).toBe(first);
    expect(pathToRegexp('/v1/logs/:cid', { sensitive: true, strict: false })).not.toBe(first);
    expect(first.regexp.exec('/v1/logs/bafkrei')?.[1]).toBe('bafkrei');
    expect(first.keys.map((key) => key.name)).toEqual(['cid']);
  });

  it('passes calls with other options through', () => {
    const options = { sensitive: false, strict: false, end: false };
    expect(pathToRegexp('/v1/logs/:cid', options)).not.toBe(pathToRegexp('/v1/logs/:cid', options));
  });

  it('is idempotent', () => {
    speedUpValidatorHotPath();
    expect(pathToRegexpModule.pathToRegexp).toBe(pathToRegexp);
  });
});
