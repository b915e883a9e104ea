/**
 * Runs before every test file. The service project shares one module graph per worker across
 * test files (vitest.config.ts, `isolate: false`), so a file that leaves the process changed
 * would change the files after it. Each file must leave the working directory, the environment
 * and the clock as it found them; this check fails the file that does not, naming what it left.
 */
import { afterAll, beforeAll, expect, vi } from 'vitest';

let cwd = '';
let env: Record<string, string | undefined> = {};

beforeAll(() => {
  cwd = process.cwd();
  env = { ...process.env };
});

afterAll(() => {
  const changed = [...new Set([...Object.keys(env), ...Object.keys(process.env)])].filter(
    (name) => env[name] !== process.env[name],
  );
  expect({ cwd: process.cwd(), changedEnvironment: changed, fakeTimers: vi.isFakeTimers() }).toEqual({
    cwd,
    changedEnvironment: [],
    fakeTimers: false,
  });
});
