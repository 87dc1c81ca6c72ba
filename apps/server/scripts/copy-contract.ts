// Copies the bundled contract and its docs page into dist/contract/, so the built server is self-contained
// (a Docker image copies dist/ only). Turbo builds the contract (`^bundle`, `^docs`) before this runs.
import { copyFileSync, existsSync, mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const serverDir = join(dirname(fileURLToPath(import.meta.url)), '..');
const source = join(serverDir, '..', '..', 'openapi', 'dist');
const target = join(serverDir, 'dist', 'contract');
const files = ['openapi.json', 'openapi.yaml', join('docs', 'index.html')];

for (const file of files) {
  const from = join(source, file);
  if (!existsSync(from)) {
    console.error(`copy-contract: ${from} is missing; build the contract first ("npx turbo run build")`);
    process.exit(1);
  }
  mkdirSync(dirname(join(target, file)), { recursive: true });
  copyFileSync(from, join(target, file));
}
console.log(`copy-contract: copied ${files.length} files to ${target}`);
