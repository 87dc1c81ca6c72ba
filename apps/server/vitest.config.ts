import { defineConfig } from 'vitest/config';

/** Test files that need a process of their own (see the in-process project). */
const OWN_PROCESS = [
  // SQLite reads SQLITE_TMPDIR once per process: the file sets it before anything opens a database.
  'src/storage/sqlite-temp-store.test.ts',
];

export default defineConfig({
  test: {
    // Each test file creates its own PostgreSQL database and SQLite directory, so files may run in parallel.
    // Two files at once (vitest's default on a 2-core machine is one): a file's time is partly waiting (on
    // the servers it started, PostgreSQL, timers), which the other file's CPU fills. TEST_WORKERS sets
    // another number.
    maxWorkers: Number(process.env.TEST_WORKERS) || 2,
    testTimeout: 30_000,
    hookTimeout: 30_000,
    projects: [
      {
        extends: true,
        test: {
          // The app in process (src/): files share their worker's modules instead of a new process each,
          // as the server's requests share one process. A file loaded the server's module graph again
          // (about 1 s of CPU) and compiled the contract's validators again (about 1.6 s) in a fresh
          // process; sharing them halves the suite's CPU. Every file still opens its own databases,
          // servers and workers, and closes them.
          name: 'in-process',
          include: ['src/**/*.test.ts'],
          exclude: OWN_PROCESS,
          isolate: false,
        },
      },
      {
        extends: true,
        test: {
          // The built server and CLI as child processes (test/), and the files that need a process of
          // their own: one fresh process per file, as vitest does by default.
          name: 'processes',
          include: ['test/**/*.test.ts', ...OWN_PROCESS],
        },
      },
    ],
  },
});
