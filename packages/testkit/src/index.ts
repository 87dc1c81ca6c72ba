/** What the test suites and benchmarks share: free ports, watched child processes, the Prism mock, waits, headless Chromium. */

export { randomApiKey } from './api-key.js';
export {
  type ExitStatus,
  runNodeProcess,
  startNodeProcess,
  type WatchedProcess,
} from './child-process.js';
export { chromiumLaunchOptions } from './chromium.js';
export { freePort } from './free-port.js';
export { type FileSnapshot, type PrismServer, prismCli, snapshotFile, startPrism } from './prism.js';
export { waitUntil } from './wait-until.js';
