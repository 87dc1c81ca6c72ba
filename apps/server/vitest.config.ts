import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
    // Each test file creates its own PostgreSQL database and SQLite directory, so files may run in parallel.
    testTimeout: 30_000,
    hookTimeout: 30_000,
  },
});
