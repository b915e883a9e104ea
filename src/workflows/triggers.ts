/**
 * Triggers that fire: when an object gains an object type that a trigger names, a job for the
 * trigger's workflow is created once. Firing is two durable steps, so that a process dying between
 * them neither loses nor doubles a job:
 *
 * 1. `PUT /objects/{id}/types` writes, in the same transaction as the object's new types, one
 *    firing per trigger of a newly gained type into `trigger_firings`, with the deterministic id
 *    `<trigger id>|<object id>` and status `pending` (never a second firing for a trigger and
 *    object: decided inside the transaction).
 * 2. The `TriggerDispatcher` turns each pending firing into a job in one transaction over the
 *    firing: the job is written together with the firing's `done` status and job id, so a firing
 *    yields exactly one job however often, and by however many processes, it is retried. It runs
 *    after each PUT, at start, and every few seconds (firings a dead process left pending).
 */
import type { Logger } from 'pino';
import type { Doc, DocumentStore } from '../store/port.ts';
import { mintSystemId } from '../objects/system-ids.ts';
import { TRIGGERS, getWorkflow, type TriggerRecord, type WorkflowRecord } from './catalog.ts';
import { JOBS } from './jobs.ts';

/** The durable trigger queue. */
export const TRIGGER_FIRINGS = 'trigger_firings';

export type FiringStatus = 'pending' | 'done' | 'failed';

/** One trigger firing for one object: queued (`pending`), then `done` with its job (or `failed`). */
export interface TriggerFiring {
  id: string;
  trigger_id: string;
  object_id: string;
  object_type_id: string;
  workflow_id: string;
  status: FiringStatus;
  created_at: string;
  job_id?: string;
  fired_at?: string;
  /** Why a firing could not become a job (its workflow left the catalog). */
  detail?: string;
}

/** The firing of `triggerId` for `objectId`: one id per pair, so a pair fires at most once. */
export function firingId(triggerId: string, objectId: string): string {
  return `${triggerId}|${objectId}`;
}

/** Triggers whose object type is one of `objectTypeIds`, read before the types are written. */
export async function triggersOfTypes(
  store: Pick<DocumentStore, 'find'>,
  objectTypeIds: string[],
): Promise<TriggerRecord[]> {
  if (objectTypeIds.length === 0) return [];
  const found = await store.find(TRIGGERS, { object_type_id: { $in: objectTypeIds } });
  return found as unknown as TriggerRecord[];
}

/**
 * The firings to write when an object's types go from `before` to `after`: one per trigger of a
 * type the object newly gained, unless that trigger already fired for the object (`existing`,
 * read in the same transaction). Pure, so it can run inside a store transaction.
 */
export function newFirings(
  objectId: string,
  before: string[],
  after: string[],
  triggers: Array<Pick<TriggerRecord, 'id' | 'object_type_id' | 'workflow_id'>>,
  existing: ReadonlyMap<string, Doc | null>,
  now: string,
): TriggerFiring[] {
  const had = new Set(before);
  const gained = new Set(after.filter((t) => !had.has(t)));
  const firings: TriggerFiring[] = [];
  for (const trigger of triggers) {
    if (!gained.has(trigger.object_type_id)) continue;
    const id = firingId(trigger.id, objectId);
    if (existing.get(id) || firings.some((f) => f.id === id)) continue;
    firings.push({
      id,
      trigger_id: trigger.id,
      object_id: objectId,
      object_type_id: trigger.object_type_id,
      workflow_id: trigger.workflow_id,
      status: 'pending',
      created_at: now,
    });
  }
  return firings;
}

/** The part of a catalog workflow a job carries. */
function jobWorkflow(workflow: WorkflowRecord): Doc {
  const carried: Doc = { id: workflow.id };
  if (workflow.name !== null && workflow.name !== undefined) carried.name = workflow.name;
  if (workflow.description !== null && workflow.description !== undefined)
    carried.description = workflow.description;
  carried.capability_ids = workflow.capability_ids ?? [];
  return carried;
}

export interface TriggerDispatcherOptions {
  /** How often pending firings are looked for (firings left by a process that died). */
  intervalMs?: number;
  /** Firings read per batch while draining. */
  batchSize?: number;
}

/** What became of one firing when dispatched. */
export type DispatchOutcome = 'created' | 'already-done' | 'failed' | 'absent';

export class TriggerDispatcher {
  private timer: NodeJS.Timeout | undefined;
  private draining: Promise<number> | undefined;
  private drainAgain = false;
  private stopped = false;
  private readonly intervalMs: number;
  private readonly batchSize: number;

  constructor(
    private readonly store: DocumentStore,
    private readonly logger: Logger,
    options: TriggerDispatcherOptions = {},
  ) {
    this.intervalMs = options.intervalMs ?? 5000;
    this.batchSize = options.batchSize ?? 200;
  }

  /** Drains once now, then every `intervalMs`. */
  start(): void {
    this.kick();
    this.timer = setInterval(() => this.kick(), this.intervalMs);
    // Never what keeps a process alive.
    this.timer.unref();
  }

  /** Stops the timer and waits for a drain under way to finish its current firing. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    await this.draining?.catch(() => undefined);
  }

  /** Starts a drain unless one is under way (which then runs once more). Never rejects. */
  kick(): void {
    void this.drain().catch((err: unknown) => this.logger.error({ err }, 'trigger dispatch failed'));
  }

  /** Turns every pending firing into its job; answers how many jobs this drain created. */
  drain(): Promise<number> {
    if (this.draining) {
      this.drainAgain = true;
      return this.draining;
    }
    this.draining = (async () => {
      let created = 0;
      try {
        do {
          this.drainAgain = false;
          created += await this.drainPending();
        } while (this.drainAgain && !this.stopped);
      } finally {
        this.draining = undefined;
      }
      return created;
    })();
    return this.draining;
  }

  /** Dispatches the given firings now (those a request just queued); answers the job ids created. */
  async dispatch(ids: string[]): Promise<string[]> {
    const workflows = new Map<string, WorkflowRecord | null>();
    const jobIds: string[] = [];
    for (const id of ids) {
      if (this.stopped) break;
      const outcome = await this.dispatchOne(id, workflows);
      if (outcome.jobId) jobIds.push(outcome.jobId);
    }
    return jobIds;
  }

  private async drainPending(): Promise<number> {
    let created = 0;
    const workflows = new Map<string, WorkflowRecord | null>();
    let afterId: string | undefined;
    while (!this.stopped) {
      const batch = await this.store.find(
        TRIGGER_FIRINGS,
        { status: 'pending' },
        { afterId, limit: this.batchSize, projection: ['id'] },
      );
      if (batch.length === 0) break;
      for (const { id } of batch) {
        if (this.stopped) break;
        const outcome = await this.dispatchOne(id, workflows);
        if (outcome.result === 'created') created++;
      }
      afterId = batch[batch.length - 1]!.id;
    }
    return created;
  }

  /**
   * One firing to its job, in one transaction over the firing: the job and the firing's `done`
   * are written together, and a firing found no longer pending writes nothing.
   */
  private async dispatchOne(
    id: string,
    workflows: Map<string, WorkflowRecord | null>,
  ): Promise<{ result: DispatchOutcome; jobId?: string }> {
    const queued = (await this.store.getById(TRIGGER_FIRINGS, id)) as unknown as TriggerFiring | null;
    if (!queued) return { result: 'absent' };
    if (queued.status !== 'pending') return { result: 'already-done', jobId: queued.job_id };
    if (!workflows.has(queued.workflow_id)) {
      workflows.set(queued.workflow_id, await getWorkflow(this.store, queued.workflow_id));
    }
    const workflow = workflows.get(queued.workflow_id) ?? null;
    // Minted outside the transaction: `decide` must be pure, and on a retry it writes the same job.
    const jobId = mintSystemId();
    const now = new Date().toISOString();
    const outcome = await this.store.readModifyWrite(
      [{ collection: TRIGGER_FIRINGS, id }],
      ([current]): { writes: Array<{ collection: string; docs: Doc[] }>; value: DispatchOutcome } => {
        const firing = current as unknown as TriggerFiring | null;
        if (!firing) return { writes: [], value: 'absent' };
        if (firing.status !== 'pending') return { writes: [], value: 'already-done' };
        if (!workflow) {
          const failed: TriggerFiring = {
            ...firing,
            status: 'failed',
            detail: `workflow ${firing.workflow_id} is not in the catalog`,
          };
          return {
            writes: [{ collection: TRIGGER_FIRINGS, docs: [failed as unknown as Doc] }],
            value: 'failed',
          };
        }
        const job: Doc = {
          id: jobId,
          workflow: jobWorkflow(workflow),
          config: { object_id: firing.object_id },
          claims: [],
          created_at: now,
        };
        const done: TriggerFiring = { ...firing, status: 'done', job_id: jobId, fired_at: now };
        return {
          writes: [
            { collection: JOBS, docs: [job] },
            { collection: TRIGGER_FIRINGS, docs: [done as unknown as Doc] },
          ],
          value: 'created',
        };
      },
    );
    if (outcome === 'created') {
      this.logger.info(
        {
          trigger_id: queued.trigger_id,
          object_id: queued.object_id,
          workflow_id: queued.workflow_id,
          job_id: jobId,
        },
        'trigger fired',
      );
      return { result: outcome, jobId };
    }
    if (outcome === 'failed') {
      this.logger.warn(
        { trigger_id: queued.trigger_id, object_id: queued.object_id, workflow_id: queued.workflow_id },
        'trigger firing failed: its workflow is not in the catalog',
      );
    }
    if (outcome === 'already-done') {
      const now = (await this.store.getById(TRIGGER_FIRINGS, id)) as unknown as TriggerFiring | null;
      return { result: outcome, jobId: now?.job_id };
    }
    return { result: outcome };
  }
}
