import os from 'node:os';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts', 'search/**/*.test.ts', 'contract-tests/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // One test file per core. Vitest's default leaves one core idle (cores - 1), which on two cores
    // runs the files one at a time; the main process only reports, and the process-level tests
    // spend much of their time waiting on the servers they spawned.
    maxWorkers: Math.max(2, os.availableParallelism()),
    reporters: ['default', 'json', './test/support/slowest-reporter.ts'],
    outputFile: { json: 'artifacts/vitest.json' },
    env: { LOG_LEVEL: 'silent', PACT_DO_NOT_TRACK: 'true' },
    // Pact consumers write pacts/ before anything else runs; the provider verification reads them.
    projects: [
      {
        extends: true,
        test: {
          name: 'pact-consumers',
          include: ['contract-tests/consumer/**/*.test.ts'],
          // `extends` merges the root include; keep every other kind of test out of this group.
          exclude: ['**/node_modules/**', 'test/**', 'search/**', 'contract-tests/provider/**'],
          sequence: { groupOrder: 0 },
        },
      },
      {
        extends: true,
        test: {
          name: 'service',
          exclude: ['**/node_modules/**', '**/.git/**', 'contract-tests/consumer/**'],
          sequence: { groupOrder: 1 },
          // The files of a worker share one module graph: importing the app (Express, the
          // validators, the schema, the OIDC provider) once per worker instead of once per file
          // halves the suite's CPU time. A file must leave the process as it found it; the guard
          // below fails the one that does not.
          isolate: false,
          setupFiles: ['test/support/global-state-guard.ts'],
        },
      },
    ],
  },
});
