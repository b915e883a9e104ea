/**
 * Long fuzzing mode: the same properties as test/fuzz with many more runs.
 * `npx tsx bench/fuzz/run.ts [RUNS] [SEED]` (default 5,000 runs per property, the fixed seed).
 */
import { spawnSync } from 'node:child_process';

const runs = process.argv[2] ?? '5000';
const seed = process.argv[3] ?? process.env.FUZZ_SEED ?? '20261123';
process.stdout.write(`fuzzing with ${runs} runs per property, seed ${seed}\n`);
const result = spawnSync('npx', ['vitest', 'run', 'test/fuzz', '--testTimeout', '3600000'], {
  stdio: 'inherit',
  env: { ...process.env, FUZZ_RUNS: runs, FUZZ_SEED: seed },
});
process.exit(result.status ?? 1);
