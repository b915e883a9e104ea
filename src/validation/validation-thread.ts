/**
 * The schema check of large records on a worker thread (see schema-violations.ts for which): the
 * event loop answers other requests while it runs. One thread, started on first use (it loads
 * and compiles the schema's classes it meets, about a second), stopped after a minute without
 * a record.
 */
import { JobThread } from '../job-thread.ts';
import type { SchemaViolations } from './schema-violations.ts';

const IDLE_MS = 60_000;

const thread = new JobThread<{ className: string; record: unknown }, SchemaViolations>(
  new URL('../worker-boot.mjs', import.meta.url),
  { workerData: { module: new URL('./validation-worker.ts', import.meta.url).href } },
  'the validation thread',
  IDLE_MS,
);

/** `schemaViolations` of the record, computed on the validation thread. */
export function schemaViolationsOnThread(className: string, record: unknown): Promise<SchemaViolations> {
  return thread.run({ className, record });
}
