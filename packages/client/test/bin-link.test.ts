import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { expect, it } from 'vitest';

const PACKAGE_DIR = fileURLToPath(new URL('..', import.meta.url));

// Review: the bin pointed into dist/, which a fresh clone's `npm install` runs before; npm skipped it, so
// `npx scenario-scoring-audit` from the repository root, as the README says, answered an npm 404.
it('links every bin from a committed file, present before any build', async () => {
  const { bin } = JSON.parse(await readFile(`${PACKAGE_DIR}/package.json`, 'utf8')) as {
    bin: Record<string, string>;
  };
  expect(Object.keys(bin)).toContain('scenario-scoring-audit');
  for (const target of Object.values(bin)) {
    // Fails (exit 1) when the file is not tracked by git, as nothing under dist/ is.
    const tracked = await promisify(execFile)('git', ['ls-files', '--error-unmatch', target], {
      cwd: PACKAGE_DIR,
    }).then(
      () => true,
      () => false,
    );
    expect(tracked, `${target} is not a committed file`).toBe(true);
  }
});
