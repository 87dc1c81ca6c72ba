import { defineConfig } from 'vitest/config';

// The docs test drives headless Chromium and the mock test starts Prism: both need more than the defaults.
export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
  },
});
