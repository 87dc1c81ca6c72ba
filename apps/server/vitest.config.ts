import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
    // Each test file creates its own PostgreSQL database and SQLite directory, so files may run in parallel.
    // Most of a file's time is spent waiting (on servers it started, PostgreSQL, timers), so two files at
    // once on a 2-core machine (vitest's default there is one) take about 60 % of the time; TEST_WORKERS
    // sets another number.
    maxWorkers: Number(process.env.TEST_WORKERS) || 2,
    testTimeout: 30_000,
    hookTimeout: 30_000,
  },
});
