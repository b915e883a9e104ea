/**
 * The bcrypt thread's side (bcrypt-thread.ts): each message is one comparison or hash, answered
 * with its result or its error.
 */
import { parentPort } from 'node:worker_threads';
import bcrypt from 'bcryptjs';
import type { BcryptJob, BcryptReply } from './bcrypt-thread.ts';

parentPort!.on('message', (job: BcryptJob) => {
  let reply: BcryptReply;
  try {
    reply =
      job.op === 'compare'
        ? { id: job.id, result: bcrypt.compareSync(job.input, job.hash) }
        : { id: job.id, result: bcrypt.hashSync(job.input, job.cost) };
  } catch (err) {
    reply = { id: job.id, error: err instanceof Error ? err.message : String(err) };
  }
  parentPort!.postMessage(reply);
});
