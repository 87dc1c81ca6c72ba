import { startPrismTarget } from './prism-target.js';
import { startServerTarget } from './server-target.js';
import type { Target, TargetKind, TargetOptions } from './target-types.js';

export type { Target, TargetKind, TargetOptions } from './target-types.js';

/** The target chosen by `CONTRACT_TARGET` (`mock` or `server`). */
export function targetKind(): TargetKind {
  const kind = process.env.CONTRACT_TARGET;
  if (kind === 'mock' || kind === 'server') return kind;
  throw new Error(`set CONTRACT_TARGET to "mock" or "server" (got ${JSON.stringify(kind)})`);
}

/** Starts the target chosen by `CONTRACT_TARGET`. */
export function startTarget(options: TargetOptions = {}): Promise<Target> {
  return targetKind() === 'mock' ? startPrismTarget() : startServerTarget(options);
}
