/**
 * Summarises a V8 `.cpuprofile` (from `node --cpu-prof`): self time by package (or by file for the
 * project's own code and Node's internals) and the hottest functions, so a profile can be read in a
 * terminal.
 *
 *   node bench/lib/profile-summary.ts <file.cpuprofile> [--top 30]
 */
import { readFileSync } from 'node:fs';
import { benchArgs } from './bench-args.ts';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount: number;
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

const { values, positionals } = benchArgs(import.meta.url, {
  allowPositionals: true,
  options: { top: { type: 'string', default: '30' } },
});
const file = positionals[0];
if (file === undefined)
  throw new Error('usage: node bench/lib/profile-summary.ts <file.cpuprofile> [--top 30]');
const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile;

const selfUs = new Map<number, number>();
profile.samples.forEach((id, i) => {
  selfUs.set(id, (selfUs.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0));
});
const total = [...selfUs.values()].reduce((a, b) => a + b, 0);

/** The package a script belongs to (`express`, `@scope/name`), else the project file or Node internal. */
function area(url: string, name: string): string {
  if (url === '') return `(${name || 'native'})`;
  const inModules = url.lastIndexOf('node_modules/');
  if (inModules >= 0) {
    const rest = url.slice(inModules + 'node_modules/'.length).split('/');
    return rest[0]?.startsWith('@') ? `${rest[0]}/${rest[1]}` : (rest[0] ?? url);
  }
  if (url.startsWith('node:')) return url;
  const dist = url.indexOf('/dist/');
  return dist >= 0 ? url.slice(url.lastIndexOf('/', dist - 1) + 1) : url;
}

const byArea = new Map<string, number>();
const byFunction = new Map<string, number>();
for (const node of profile.nodes) {
  const us = selfUs.get(node.id) ?? 0;
  if (us === 0) continue;
  const { functionName, url, lineNumber } = node.callFrame;
  const where = area(url, functionName);
  byArea.set(where, (byArea.get(where) ?? 0) + us);
  const fn = `${functionName || '(anonymous)'} ${where}:${lineNumber + 1}`;
  byFunction.set(fn, (byFunction.get(fn) ?? 0) + us);
}
const top = Number(values.top);
const table = (map: Map<string, number>) =>
  [...map.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, top)
    .map(([name, us]) => ({ name, '% self': Number(((us / total) * 100).toFixed(1)) }));
console.log(`${file}: ${(total / 1e6).toFixed(2)} s of samples`);
console.table(table(byArea));
console.table(table(byFunction));
