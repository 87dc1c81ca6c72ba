import { randomApiKey, snapshotFile, startPrism } from '@scenario-scoring/testkit';
import type { Target } from './target-types.js';
import { BUNDLE_YAML, REPO_ROOT } from './workspace-paths.js';

/** Starts `prism mock` on a free port, serving a private copy of the contract bundle. */
export async function startPrismTarget(): Promise<Target> {
  const snapshot = snapshotFile(BUNDLE_YAML);
  let prism: Awaited<ReturnType<typeof startPrism>>;
  try {
    prism = await startPrism(snapshot.path, { cwd: REPO_ROOT });
  } catch (error) {
    snapshot.remove();
    throw error;
  }
  return {
    kind: 'mock',
    baseUrl: prism.baseUrl,
    apiKey: randomApiKey(),
    otherTenantKey: randomApiKey(),
    stop: async () => {
      await prism.stop();
      snapshot.remove();
    },
  };
}
