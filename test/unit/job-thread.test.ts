/** JobThread (src/job-thread.ts): jobs answered in order, errors and a dead thread surfaced, idle stop. */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { JobThread } from '../../src/job-thread.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'nmdc-job-thread-'));
const entry = path.join(dir, 'worker.mjs');
// Doubles `n`; refuses a negative one; `exit` ends the thread without answering.
fs.writeFileSync(
  entry,
  `import { parentPort, threadId } from 'node:worker_threads';
parentPort.on('message', (job) => {
  if (job.exit) process.exit(3);
  parentPort.postMessage(job.n < 0 ? { id: job.id, error: 'negative: ' + job.n } : { id: job.id, result: { double: 2 * job.n, threadId } });
});`,
);
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

type Job = { n: number } | { exit: true };
type Result = { double: number; threadId: number };
const threadOf = (idleMs?: number) =>
  new JobThread<Job, Result>(new URL(`file://${entry}`), { execArgv: [] }, 'the test thread', idleMs);

describe('JobThread', () => {
  it('answers jobs on one thread, each with its own result, and errors as errors', async () => {
    const thread = threadOf();
    const results = await Promise.all([1, 2, 3].map((n) => thread.run({ n })));
    expect(results.map((r) => r.double)).toEqual([2, 4, 6]);
    expect(new Set(results.map((r) => r.threadId)).size).toBe(1);
    await expect(thread.run({ n: -1 })).rejects.toThrow('negative: -1');
    expect((await thread.run({ n: 5 })).double).toBe(10);
    await thread.close();
  });

  it('fails the jobs of a thread that exits, and starts another for the next job', async () => {
    const thread = threadOf();
    const first = (await thread.run({ n: 1 })).threadId;
    await expect(thread.run({ exit: true })).rejects.toThrow('the test thread exited (code 3)');
    const next = await thread.run({ n: 4 });
    expect(next.double).toBe(8);
    expect(next.threadId).not.toBe(first);
    await thread.close();
  });

  it('stops a thread idle for idleMs, and starts another when needed', async () => {
    const thread = threadOf(50);
    const first = (await thread.run({ n: 1 })).threadId;
    // Jobs that keep coming keep the thread.
    expect((await thread.run({ n: 2 })).threadId).toBe(first);
    await new Promise((resolve) => setTimeout(resolve, 300));
    const after = await thread.run({ n: 3 });
    expect(after.double).toBe(6);
    expect(after.threadId).not.toBe(first);
    await thread.close();
  });

  it('holds the process while an idle thread is closed, as a caller awaiting close() expects', () => {
    // In a process of its own: the test runner keeps this one's event loop busy. An idle thread is
    // let go of, and awaiting its end once left nothing to run, ending the process at that await
    // (the service's primary process quit after preparing a freshly loaded store).
    const job = path.join(ROOT, 'src/job-thread.ts');
    const preparer = path.join(ROOT, 'search/sqlite/preparer.ts');
    const script = `
      import { JobThread } from ${JSON.stringify(job)};
      import { WorkerPreparer } from ${JSON.stringify(preparer)};
      const thread = new JobThread(new URL(${JSON.stringify(`file://${entry}`)}), { execArgv: [] }, 'the test thread');
      await thread.run({ n: 1 });
      // Closed with a job under way, whose answer arrives while the thread is stopped.
      const pending = thread.run({ n: 2 }).then((r) => r.double, () => 'failed');
      const until = Date.now() + 200;
      while (Date.now() < until);
      await thread.close();
      console.log('thread closed', await pending);
      const idle = new JobThread(new URL(${JSON.stringify(`file://${entry}`)}), { execArgv: [] }, 'the test thread');
      await idle.run({ n: 1 });
      await idle.close();
      console.log('idle thread closed');
      const workers = new WorkerPreparer(undefined, 1024);
      await workers.prepare([JSON.stringify({ id: 'nmdc:bsm-11-x', name: 'one' })]);
      await workers.close();
      console.log('workers closed');
      // Closed with a batch under way on a worker that is up (ids 0 and 2 go to the same one).
      const busy = new WorkerPreparer(undefined, 1024);
      const batch = [JSON.stringify({ id: 'nmdc:bsm-11-y', name: 'two' })];
      await Promise.all([busy.prepare(batch), busy.prepare(batch)]);
      const under = busy.prepare(batch).then(() => 'prepared', () => 'failed');
      const until2 = Date.now() + 200;
      while (Date.now() < until2);
      await busy.close();
      console.log('busy workers closed', await under);`;
    const file = path.join(dir, 'close.mts');
    fs.writeFileSync(file, script);
    const run = spawnSync(process.execPath, ['--import', 'tsx', file], { cwd: ROOT, encoding: 'utf8' });
    expect(run.stdout.trim().split('\n'), run.stderr).toEqual([
      'thread closed 4',
      'idle thread closed',
      'workers closed',
      'busy workers closed prepared',
    ]);
    expect(run.status).toBe(0);
  });
});
