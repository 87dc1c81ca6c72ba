import { defineConfig } from 'vitest/config';

/**
 * The same files run twice, once per target, as two projects: `mock` (Prism serving the contract) and
 * `server` (the built server, started as `npm start` starts it). `--project mock` runs one of them.
 */
export default defineConfig({
  test: {
    include: ['src/**/*.test.ts'],
    // Each file starts its own target process; one file at a time keeps the machine quiet enough for the
    // rate-limit timing and keeps the processes few.
    fileParallelism: false,
    maxWorkers: 1,
    // Prism and the server take seconds to start.
    hookTimeout: 60_000,
    testTimeout: 30_000,
    projects: [
      { extends: true, test: { name: 'mock', env: { CONTRACT_TARGET: 'mock' } } },
      { extends: true, test: { name: 'server', env: { CONTRACT_TARGET: 'server' } } },
    ],
  },
});
