/**
 * bcrypt on a worker thread. bcryptjs is JavaScript: a comparison at cost 10 takes about 85 ms of
 * CPU here, and its asynchronous form gives the event loop a turn only every 100 ms, so each
 * login held every other request of its process for that long. One thread, started on first use
 * and let go of (unref) while idle, does them one after another, as the event loop did.
 */
import { Worker } from 'node:worker_threads';

/** A message to the thread (bcrypt-worker.mjs), and its answer. */
type Job = { op: 'compare'; input: string; hash: string } | { op: 'hash'; input: string; cost: number };
type BcryptReply = { id: number; result: boolean | string } | { id: number; error: string };

interface Waiting {
  resolve: (result: boolean | string) => void;
  reject: (err: Error) => void;
}

let worker: Worker | undefined;
const waiting = new Map<number, Waiting>();
let next = 0;

function started(): Worker {
  if (worker) return worker;
  // Plain JavaScript: the thread needs none of the process's loaders (`--import tsx`).
  const w = new Worker(new URL('./bcrypt-worker.mjs', import.meta.url), { execArgv: [] });
  w.unref();
  const fail = (err: Error) => {
    if (worker === w) worker = undefined;
    for (const job of waiting.values()) job.reject(err);
    waiting.clear();
  };
  w.on('message', (reply: BcryptReply) => {
    const job = waiting.get(reply.id);
    if (!job) return;
    waiting.delete(reply.id);
    if (waiting.size === 0) w.unref();
    if ('error' in reply) job.reject(new Error(reply.error));
    else job.resolve(reply.result);
  });
  w.on('error', fail);
  w.on('exit', (code) => fail(new Error(`the bcrypt thread exited (code ${code})`)));
  worker = w;
  return w;
}

function run(job: Job): Promise<boolean | string> {
  const id = next++;
  const w = started();
  return new Promise((resolve, reject) => {
    waiting.set(id, { resolve, reject });
    w.ref();
    w.postMessage({ ...job, id });
  });
}

/** Whether `input` matches the bcrypt `hash`, compared on the bcrypt thread. */
export async function compareOnThread(input: string, hash: string): Promise<boolean> {
  return (await run({ op: 'compare', input, hash })) as boolean;
}

/** The bcrypt hash of `input` at `cost`, made on the bcrypt thread. */
export async function hashOnThread(input: string, cost: number): Promise<string> {
  return (await run({ op: 'hash', input, cost })) as string;
}
