/**
 * bcrypt on a worker thread. bcryptjs is JavaScript: a comparison at cost 10 takes about 85 ms of
 * CPU here, and its asynchronous form gives the event loop a turn only every 100 ms, so each
 * login held every other request of its process for that long. One thread, started on first use
 * and let go of (unref) while idle, does them one after another, as the event loop did.
 */
import { JobThread } from '../job-thread.ts';

/** A message to the thread (bcrypt-worker.mjs). */
type Job = { op: 'compare'; input: string; hash: string } | { op: 'hash'; input: string; cost: number };

// Plain JavaScript: the thread needs none of the process's loaders (`--import tsx`).
const thread = new JobThread<Job, boolean | string>(
  new URL('./bcrypt-worker.mjs', import.meta.url),
  { execArgv: [] },
  'the bcrypt thread',
);

/** Whether `input` matches the bcrypt `hash`, compared on the bcrypt thread. */
export async function compareOnThread(input: string, hash: string): Promise<boolean> {
  return (await thread.run({ op: 'compare', input, hash })) as boolean;
}

/** The bcrypt hash of `input` at `cost`, made on the bcrypt thread. */
export async function hashOnThread(input: string, cost: number): Promise<string> {
  return (await thread.run({ op: 'hash', input, cost })) as string;
}
