/**
 * Runs: one record per piece of work the service carries out for a caller (today: applying a
 * metadata submission), in the DocumentStore collection `runs`. A record is stored in the shape
 * `GET /runs/{run_id}` answers: the original's run summary (id, status, started_at_time,
 * was_started_by, inputs, outputs, job, producer, schemaURL) extended with when it ended, the
 * stored object it read, time spent per phase, records inserted and replaced per collection, and
 * errors. Status uses the original's run event vocabulary, so its clients can read it: `COMPLETE`
 * (succeeded) or `FAIL` (failed).
 * Runs requested through `POST /runs` keep the same summary, folded from their OpenLineage events
 * (run-events.ts) as each arrives; every run's events are in `run_events`.
 */
import type { Doc, DocumentStore } from '../store/port.ts';
import { mintSystemId } from '../objects/system-ids.ts';

export const RUNS = 'runs';

/** As the original's run summaries (OpenLineage producer and schema). */
export const RUN_PRODUCER =
  'https://github.com/microbiomedata/nmdc-runtime/tree/v0-0-1/nmdc_runtime/producer';
export const RUN_SCHEMA_URL =
  'https://github.com/microbiomedata/nmdc-runtime/tree/v0-0-1/nmdc_runtime/schema.json';

export type RunStatus = 'REQUESTED' | 'STARTED' | 'COMPLETE' | 'FAIL';

export interface RunJob {
  id: string;
  description: string;
  producer: string;
  schemaURL: string;
}

/** Records written to one collection: new ids, and ids that existed and were replaced. */
export interface CollectionCounts {
  inserted: number;
  replaced: number;
}

export interface RunRecord {
  id: string;
  status: RunStatus;
  started_at_time: string;
  ended_at_time?: string;
  /** Username (or site client id) of who started it. */
  was_started_by: string;
  /** Stored objects read. */
  inputs: string[];
  outputs: string[];
  job: RunJob;
  producer: string;
  schemaURL: string;
  /** The stored object holding the submitted payload. */
  object_id?: string;
  /** Milliseconds per phase, in the order they ran. */
  timings_ms: Record<string, number>;
  counts: Record<string, CollectionCounts>;
  errors: string[];
  /** Events recorded for the run so far (store internal: numbers the next event). */
  event_count?: number;
}

/** The summary every run has, whether a metadata submission or requested through `POST /runs`. */
export type RunSummary = Pick<
  RunRecord,
  | 'id'
  | 'status'
  | 'started_at_time'
  | 'was_started_by'
  | 'inputs'
  | 'outputs'
  | 'job'
  | 'producer'
  | 'schemaURL'
>;

/** A stored run: the summary, a submission's details when it is one, and store internals. */
export type StoredRun = RunSummary &
  Partial<Omit<RunRecord, keyof RunSummary>> & {
    /** Requested through `POST /runs`: a site carries it out, reporting its events. */
    site_reported?: boolean;
    /** The site carrying the run out: the first site whose client reported on it. */
    carried_out_by?: string;
  };

/** Fields of a stored run that are the store's business, never answered. */
const INTERNAL_RUN_FIELDS = ['event_count', 'site_reported', 'carried_out_by'] as const;

/** A run as `GET /runs/{run_id}` answers it. */
export function publicRun(run: StoredRun): Record<string, unknown> {
  const shown: Record<string, unknown> = { ...run };
  for (const field of INTERNAL_RUN_FIELDS) delete shown[field];
  return shown;
}

/** Run ids as the original's (`nmdc:` + the runtime's `sys0` shoulder). */
export function mintRunId(): string {
  return mintSystemId();
}

/** A run being carried out: its record, filled in phase by phase. */
export class RunInProgress {
  readonly record: RunRecord;
  private phaseStart = performance.now();

  constructor(job: { id: string; description: string }, startedBy: string, startedAt = new Date()) {
    this.record = {
      id: mintRunId(),
      status: 'STARTED',
      started_at_time: startedAt.toISOString(),
      was_started_by: startedBy,
      inputs: [],
      outputs: [],
      job: { ...job, producer: RUN_PRODUCER, schemaURL: RUN_SCHEMA_URL },
      producer: RUN_PRODUCER,
      schemaURL: RUN_SCHEMA_URL,
      timings_ms: {},
      counts: {},
      errors: [],
    };
  }

  /** Ends the current phase under `name` (time since the previous phase ended, or the run began). */
  phaseDone(name: string): void {
    const now = performance.now();
    this.record.timings_ms[name] = Math.round((now - this.phaseStart) * 10) / 10;
    this.phaseStart = now;
  }

  complete(): RunRecord {
    this.record.status = 'COMPLETE';
    this.record.ended_at_time = new Date().toISOString();
    return this.record;
  }

  fail(error: string): RunRecord {
    this.record.status = 'FAIL';
    this.record.ended_at_time = new Date().toISOString();
    this.record.errors.push(error);
    return this.record;
  }
}

export function runDoc(run: RunRecord): Doc {
  return run as unknown as Doc;
}

export async function getRun(store: DocumentStore, id: string): Promise<StoredRun | null> {
  return (await store.getById(RUNS, id)) as unknown as StoredRun | null;
}
