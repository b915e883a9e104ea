/**
 * Run events in the OpenLineage shape of the original (`REQUESTED`, `STARTED`, `FAIL`, `COMPLETE`),
 * kept in the DocumentStore collection `run_events`, and the run summaries folded from them.
 * A run's record in `runs` carries its summary and how many events it has; an event is written in
 * the same transaction as the summary it changes (`readModifyWrite`), so two sites reporting at once
 * cannot both follow a terminal event or number their events alike. Events are keyed by run id and
 * their number, so the id order of a run's events is the order they were recorded in.
 */
import type { Doc, DocumentStore } from '../store/port.ts';
import { Conflict, Forbidden, NotFound } from '../errors.ts';
import type { Principal } from '../accounts/principal.ts';
import { mintSystemId } from '../objects/system-ids.ts';
import {
  RUNS,
  RUN_PRODUCER,
  RUN_SCHEMA_URL,
  type RunJob,
  type RunRecord,
  type RunStatus,
  type StoredRun,
} from './runs.ts';

export const RUN_EVENTS = 'run_events';

export const RUN_EVENT_TYPES: readonly RunStatus[] = ['REQUESTED', 'STARTED', 'FAIL', 'COMPLETE'];

/** After one of these, a run takes no more events. */
const TERMINAL: ReadonlySet<RunStatus> = new Set<RunStatus>(['FAIL', 'COMPLETE']);

/** The original's RunEvent. */
export interface RunEvent {
  producer: string;
  schemaURL: string;
  run: { id: string; facets?: Record<string, unknown> | null };
  job: RunJob;
  type: RunStatus;
  time: string;
  inputs: string[];
  outputs: string[];
}

/** A run's events sort by id in the order they were recorded: the run id, then a fixed-width number. */
function eventId(runId: string, number: number): string {
  return `${runId}/${String(number).padStart(9, '0')}`;
}

/** An event as the API answers it (the record id is the store's). */
export function publicEvent(record: Doc): RunEvent {
  const { id: _id, ...event } = record;
  return event as unknown as RunEvent;
}

/** The summary after `event`: status, job and producer of the latest event; inputs and outputs of all. */
function summaryWith(run: StoredRun | null, event: RunEvent): StoredRun {
  const next: StoredRun = run
    ? {
        ...run,
        status: event.type,
        inputs: [...run.inputs, ...event.inputs],
        outputs: [...run.outputs, ...event.outputs],
        job: event.job,
        producer: event.producer,
        schemaURL: event.schemaURL,
      }
    : {
        id: event.run.id,
        status: event.type,
        started_at_time: event.time,
        // As the original: the first event's producer (a REQUESTED event's is the requesting user).
        was_started_by: event.producer,
        inputs: [...event.inputs],
        outputs: [...event.outputs],
        job: event.job,
        producer: event.producer,
        schemaURL: event.schemaURL,
      };
  if (TERMINAL.has(event.type)) next.ended_at_time = event.time;
  next.event_count = (run?.event_count ?? 0) + 1;
  return next;
}

/**
 * Who may read a run: its starter, runtime administrators, and the site that carries it out (its
 * clients, once one of them reported on it).
 */
export function mayReadRun(principal: Principal, run: StoredRun): boolean {
  if (principal.isRuntimeAdmin || principal.subject === run.was_started_by) return true;
  return (
    principal.kind === 'site_client' &&
    run.carried_out_by !== undefined &&
    run.carried_out_by === principal.siteId
  );
}

export const READ_RUN_FORBIDDEN =
  'Only the user who started a run, a runtime administrator, or the site that carries it out may see it.';
export const REPORT_RUN_FORBIDDEN =
  'Only the site that carries out a run (the first site to report on it) or a runtime administrator may post its events.';

/**
 * Who may add events: runtime administrators, and for a run requested through `POST /runs` the
 * site that carries it out; while no site has reported on it, any site's client, whose site then
 * carries it out.
 */
function mayReportRun(principal: Principal, run: StoredRun): boolean {
  if (principal.isRuntimeAdmin) return true;
  if (principal.kind !== 'site_client' || !principal.siteId || run.site_reported !== true) return false;
  return run.carried_out_by === undefined || run.carried_out_by === principal.siteId;
}

export interface RunRequest {
  /** The workflow to run (the original calls it a job). */
  workflow: { id: string; description: string };
  runConfig: Record<string, unknown>;
  inputs: string[];
}

/** Records a new run with its `REQUESTED` event, atomically; answers its summary. */
export async function requestRun(
  store: DocumentStore,
  request: RunRequest,
  principal: Principal,
): Promise<StoredRun> {
  const runId = mintSystemId();
  const event: RunEvent = {
    // As the original: a REQUESTED event's producer is the user who asked.
    producer: principal.subject,
    schemaURL: RUN_SCHEMA_URL,
    run: { id: runId, facets: { nmdcRuntime_runConfig: request.runConfig } },
    job: { ...request.workflow, producer: RUN_PRODUCER, schemaURL: RUN_SCHEMA_URL },
    type: 'REQUESTED',
    time: new Date().toISOString(),
    inputs: request.inputs,
    outputs: [],
  };
  return store.readModifyWrite([{ collection: RUNS, id: runId }], ([existing]) => {
    // 60 random bits: a collision is not expected, but never overwrite a run.
    if (existing) throw new Conflict(`Run ${runId} already exists; request the run again`);
    const run: StoredRun = { ...summaryWith(null, event), site_reported: true };
    return {
      writes: [
        { collection: RUNS, docs: [run as unknown as Doc] },
        { collection: RUN_EVENTS, docs: [{ id: eventId(runId, 1), ...event }] },
      ],
      value: run,
    };
  });
}

/**
 * Adds `event` to its run (`event.run.id`) for `principal`: 404 when there is no such run, 403 when
 * the principal may not report it, 409 when the run already ended. Answers the event as stored.
 */
export async function recordRunEvent(
  store: DocumentStore,
  event: RunEvent,
  principal: Principal,
): Promise<RunEvent> {
  const runId = event.run.id;
  return store.readModifyWrite([{ collection: RUNS, id: runId }], ([current]) => {
    const run = current as unknown as StoredRun | null;
    if (!run) throw new NotFound(`Run ${runId} not found`);
    if (!mayReportRun(principal, run)) throw new Forbidden(REPORT_RUN_FORBIDDEN);
    if (TERMINAL.has(run.status)) {
      throw new Conflict(`Run ${runId} is ${run.status}: it takes no events after a ${run.status} event`);
    }
    const next = summaryWith(run, event);
    // The first site to report takes the run on; in the same transaction, so of two sites
    // reporting at once exactly one does.
    if (principal.kind === 'site_client' && next.carried_out_by === undefined) {
      next.carried_out_by = principal.siteId;
    }
    return {
      writes: [
        { collection: RUNS, docs: [next as unknown as Doc] },
        { collection: RUN_EVENTS, docs: [{ id: eventId(runId, next.event_count!), ...event }] },
      ],
      value: event,
    };
  });
}

/**
 * The writes that record a finished metadata submission's run: its record and its `STARTED` and
 * `COMPLETE` (or `FAIL`) events, for the submission's one atomic write. Sets the record's event count.
 */
export function finishedRunWrites(record: RunRecord): Array<{ collection: string; docs: Doc[] }> {
  const common = {
    producer: RUN_PRODUCER,
    schemaURL: RUN_SCHEMA_URL,
    run: { id: record.id, facets: {} },
    job: record.job,
  };
  const started: RunEvent = {
    ...common,
    type: 'STARTED',
    time: record.started_at_time,
    inputs: [...record.inputs],
    outputs: [],
  };
  const ended: RunEvent = {
    ...common,
    type: record.status === 'FAIL' ? 'FAIL' : 'COMPLETE',
    time: record.ended_at_time ?? new Date().toISOString(),
    inputs: [],
    outputs: [...record.outputs],
  };
  record.event_count = 2;
  return [
    { collection: RUNS, docs: [record as unknown as Doc] },
    {
      collection: RUN_EVENTS,
      docs: [
        { id: eventId(record.id, 1), ...started },
        { id: eventId(record.id, 2), ...ended },
      ],
    },
  ];
}

/** One page of a run's events in the order they were recorded. */
export function findRunEvents(
  store: DocumentStore,
  runId: string,
  page: { afterId?: string; limit?: number },
): Promise<Doc[]> {
  return store.find(RUN_EVENTS, { 'run.id': runId }, { afterId: page.afterId, limit: page.limit });
}
