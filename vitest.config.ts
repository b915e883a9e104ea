import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts', 'search/**/*.test.ts', 'contract-tests/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    reporters: ['default', 'json'],
    outputFile: { json: 'artifacts/vitest.json' },
    env: { LOG_LEVEL: 'silent', PACT_DO_NOT_TRACK: 'true' },
  },
});
