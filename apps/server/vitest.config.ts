import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
    // Each test file creates its own PostgreSQL database and SQLite directory, so files may run in parallel.
    // Two files at once (vitest's default on a 2-core machine is one): a file's time is partly waiting (on
    // the servers it started, PostgreSQL, timers), which the other file's CPU fills. TEST_WORKERS sets
    // another number.
    maxWorkers: Number(process.env.TEST_WORKERS) || 2,
    testTimeout: 30_000,
    hookTimeout: 30_000,
  },
});
