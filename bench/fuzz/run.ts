/**
 * `npm run bench:fuzz`: the whole HTTP surface fuzzed against the service as its own process
 * (`src/main.ts` under its primary, demo data loaded): every operation of API 2.13.0 and 1.2.0,
 * anonymous and with a user's, an administrator's, a site client's and a forged token, plus the
 * hostile corpus aimed at every field that meets a pattern. Prints the requests sent, the answers
 * by status, the slowest answer, the failures (5xx, 4xx without a detail, over the deadline, no
 * answer) and whether a server process died and was replaced.
 *
 *   npm run bench:fuzz -- [--runs 20] [--seed 20261123] [--deadline-ms 5000] [--max-seconds N]
 *                         [--root <checkout>] [--properties]
 *
 * `--runs` is the number of generated requests per operation and authorization. `--root` runs
 * the `src/main.ts` of another checkout (an older commit, to compare); `--max-seconds` stops each
 * part after that long (a service that freezes would otherwise keep the run going for hours).
 * `--properties` also runs the in-process fuzz properties of test/fuzz with FUZZ_RUNS=5000.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { startFuzzTarget } from '../../test/fuzz/target.ts';
import {
  corpusRequests,
  generatedRequests,
  newTally,
  operationsOf,
  sendAll,
} from '../../test/fuzz/surface.ts';

const args = process.argv.slice(2);
const option = (name: string, fallback: string) => {
  const i = args.indexOf(name);
  return i >= 0 && args[i + 1] !== undefined ? args[i + 1]! : fallback;
};
const runs = Number(option('--runs', '20'));
const seed = Number(option('--seed', process.env.FUZZ_SEED ?? '20261123'));
const deadlineMs = Number(option('--deadline-ms', '5000'));
const maxMs = Number(option('--max-seconds', 'Infinity')) * 1000;
const root = args.includes('--root') ? path.resolve(option('--root', '.')) : undefined;

const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'nmdc-fuzz-'));
const target = await startFuzzTarget(dataDir, root);
try {
  const { operations, resolve } = operationsOf();
  process.stdout.write(
    `${root ? `server: ${root}\n` : ''}fuzzing ${operations.length} operations (2.13.0 and 1.2.0) at ${target.url}: ${runs} generated requests per operation ` +
      `and authorization (${target.context.auths.length}), seed ${seed}, deadline ${deadlineMs} ms, plus the hostile corpus\n`,
  );
  const started = performance.now();
  const corpus = newTally();
  await sendAll(target.url, corpusRequests(target.context, target.adminAuth), corpus, {
    deadlineMs,
    stopAt: performance.now() + maxMs,
  });
  const generated = newTally();
  await sendAll(
    target.url,
    generatedRequests(operations, resolve, target.context, runs * target.context.auths.length, seed),
    generated,
    { deadlineMs, stopAt: performance.now() + maxMs },
  );
  const seconds = (performance.now() - started) / 1000;
  const restarts = target.deaths();
  for (const [name, tally] of [
    ['hostile corpus', corpus],
    ['generated from the OpenAPI documents', generated],
  ] as const) {
    const statuses = [...tally.byStatus]
      .sort((a, b) => a[0] - b[0])
      .map(([s, n]) => `${s === 0 ? 'none' : s}: ${n}`);
    process.stdout.write(
      `\n${name}: ${tally.sent} requests sent\n  answers by status: ${statuses.join(', ')}\n` +
        `  slowest answer: ${Math.round(tally.slowest.ms)} ms for ${tally.slowest.what}\n` +
        `  failures: ${tally.failures.length}\n${tally.failures
          .slice(0, 20)
          .map((f) => `    ${f}\n`)
          .join('')}`,
    );
  }
  process.stdout.write(
    `\n${corpus.sent + generated.sent} requests in ${seconds.toFixed(0)} s; ` +
      `server processes that died: ${restarts.length}${restarts.length ? ` (${restarts.join('; ')})` : ''}; ` +
      `the service ${(await target.healthy()) ? 'still answers' : 'no longer answers'}\n`,
  );
  process.exitCode = corpus.failures.length + generated.failures.length + restarts.length > 0 ? 1 : 0;
} finally {
  await target.stop();
  fs.rmSync(dataDir, { recursive: true, force: true });
}

if (args.includes('--properties')) {
  process.stdout.write(`\nthe in-process fuzz properties with 5000 runs each, seed ${seed}\n`);
  const result = spawnSync(
    'npx',
    ['vitest', 'run', 'test/fuzz/public-inputs.test.ts', '--testTimeout', '3600000'],
    {
      stdio: 'inherit',
      env: { ...process.env, FUZZ_RUNS: '5000', FUZZ_SEED: String(seed) },
    },
  );
  if (result.status !== 0) process.exitCode = 1;
}
