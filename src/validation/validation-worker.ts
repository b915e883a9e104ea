/**
 * The validation thread's side (validation-thread.ts): each message is one record to check
 * against a class, answered with its described violations. The thread compiles the classes it
 * is asked for, on first use.
 */
import { parentPort } from 'node:worker_threads';
import { schemaViolations } from './schema-violations.ts';

parentPort!.on('message', (job: { id: number; className: string; record: unknown }) => {
  let reply;
  try {
    reply = { id: job.id, result: schemaViolations(job.className, job.record) };
  } catch (err) {
    reply = { id: job.id, error: err instanceof Error ? err.message : String(err) };
  }
  parentPort!.postMessage(reply);
});
