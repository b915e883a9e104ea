/**
 * Operations: long-running operations in the Google API shape (`id`, `done`, `expire_time`,
 * `result`, `metadata`), one per claim of a job by a site, kept in the DocumentStore collection
 * `operations`, and the three transactions that write them together with their job: claiming a
 * job, releasing it, and a site patching its operation. The claiming site reports progress and
 * results by patching; once its operation is done, cancelled by a release or past its
 * `expire_time`, the site's claim no longer holds the job and the site may claim it again.
 */
import type { Doc, DocumentStore, ReadModifyWriteDecision } from '../store/port.ts';
import { ClaimHeld, Conflict, Forbidden, NotFound, Unprocessable } from '../errors.ts';
import type { SiteRecord } from '../accounts/records.ts';
import { JOBS, WORKFLOWS, claimsOf, requiredCapabilities, type JobClaim, type JobRecord } from './jobs.ts';

export const OPERATIONS = 'operations';

/** The original's dotted path of the metadata model of a job's operation; clients read it. */
export const JOB_OPERATION_MODEL = 'nmdc_runtime.api.models.job.JobOperationMetadata';

/** How long a claim holds a job before its operation expires, as the original: 30 days. */
export const CLAIM_LIFETIME_MS = 30 * 24 * 3600 * 1000;

/** `metadata` keys the service writes and a site may not change. */
const READ_ONLY_METADATA = ['site_id', 'job', 'model'] as const;

export interface OperationRecord extends Doc {
  id: string;
  done: boolean;
  /** ISO 8601 date-time; past it the operation may not be patched and its claim is not held. */
  expire_time: string;
  result?: unknown;
  metadata?: Record<string, unknown> & {
    job?: { id: string; workflow: unknown; config: unknown };
    site_id?: string;
    model?: string;
    cancelled?: boolean;
  };
}

/** What `PATCH /operations/{op_id}` may set (other members of the body are ignored, as the original does). */
export interface OperationPatch {
  done?: boolean;
  result?: unknown;
  metadata?: Record<string, unknown> | null;
}

export function hasExpired(op: OperationRecord, now: Date): boolean {
  const expiry = Date.parse(op.expire_time);
  return Number.isFinite(expiry) && expiry <= now.getTime();
}

/**
 * Whether a claim still holds its job for its site: neither it nor its operation is done or
 * cancelled, and the operation has not expired. A claim whose operation is missing holds nothing.
 */
export function claimIsHeld(claim: JobClaim, op: OperationRecord | null, now: Date): boolean {
  if (claim.done === true || claim.cancelled === true || !op) return false;
  return op.done !== true && op.metadata?.cancelled !== true && !hasExpired(op, now);
}

/** The operation a new claim of `job` by `siteId` starts. */
export function claimOperation(opId: string, job: JobRecord, siteId: string, now: Date): OperationRecord {
  return {
    id: opId,
    done: false,
    expire_time: new Date(now.getTime() + CLAIM_LIFETIME_MS).toISOString(),
    metadata: {
      job: { id: job.id, workflow: job.workflow, config: job.config },
      site_id: siteId,
      model: JOB_OPERATION_MODEL,
    },
  };
}

/** Reads the members of a patch body the service honours; 422 for a member of the wrong type. */
export function readOperationPatch(body: unknown): OperationPatch {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw new Unprocessable(
      'The operation patch must be a JSON object with `done`, `result` and/or `metadata`',
    );
  }
  const given = body as Record<string, unknown>;
  const patch: OperationPatch = {};
  if ('done' in given) {
    if (typeof given.done !== 'boolean') throw new Unprocessable('`done` must be true or false');
    patch.done = given.done;
  }
  if ('result' in given) patch.result = given.result;
  if ('metadata' in given) {
    const metadata = given.metadata;
    if (metadata !== null && (typeof metadata !== 'object' || Array.isArray(metadata))) {
      throw new Unprocessable('`metadata` must be a JSON object');
    }
    patch.metadata = metadata as Record<string, unknown> | null;
  }
  return patch;
}

/**
 * The operation after `patch`: `done` and `result` as given; a given `metadata` replaces the stored
 * one except `site_id`, `job` and `model`, which stay as stored (as the original merges them). A
 * patch without `metadata` keeps the stored metadata.
 */
export function patchedOperation(op: OperationRecord, patch: OperationPatch): OperationRecord {
  const next: OperationRecord = { ...op };
  if (patch.done !== undefined) next.done = patch.done;
  if ('result' in patch) next.result = patch.result;
  if (patch.metadata !== undefined) {
    const metadata: Record<string, unknown> = { ...(patch.metadata ?? {}) };
    for (const key of READ_ONLY_METADATA) {
      delete metadata[key];
      if (op.metadata && key in op.metadata) metadata[key] = op.metadata[key];
    }
    next.metadata = metadata;
  }
  return next;
}

/**
 * Applies a site's patch to its operation. 404 for an unknown operation, 403 when the operation
 * belongs to another site, 409 once it has expired. When the patch makes it done, the job's claim
 * for it is marked done in the same transaction, so the claim stops holding the job at once.
 */
export async function patchOperation(
  store: DocumentStore,
  opId: string,
  siteId: string,
  patch: OperationPatch,
  now: Date,
): Promise<OperationRecord> {
  const stored = (await store.getById(OPERATIONS, opId)) as OperationRecord | null;
  if (!stored) throw new NotFound(`Operation ${opId} not found`);
  const jobId = stored.metadata?.job?.id;
  const keys = [{ collection: OPERATIONS, id: opId }];
  if (typeof jobId === 'string') keys.push({ collection: JOBS, id: jobId });
  return store.readModifyWrite(keys, ([opDoc, jobDoc]) => {
    const op = opDoc as OperationRecord | null;
    if (!op) throw new NotFound(`Operation ${opId} not found`);
    const owner = op.metadata?.site_id;
    if (owner !== siteId) throw new Forbidden(`client authorized for different site_id than ${owner}`);
    if (hasExpired(op, now)) {
      throw new Conflict(`Operation ${opId} expired at ${op.expire_time} and can no longer be updated`);
    }
    const next = patchedOperation(op, patch);
    const writes: Array<{ collection: string; docs: Doc[] }> = [{ collection: OPERATIONS, docs: [next] }];
    const job = jobDoc as JobRecord | null | undefined;
    if (next.done && !op.done && job) {
      const claims = (job.claims ?? []).map((claim) =>
        claim.op_id === opId && claim.done !== true ? { ...claim, done: true } : claim,
      );
      writes.push({ collection: JOBS, docs: [{ ...job, claims }] });
    }
    return { writes, value: next };
  });
}

/** The job gained a claim of the site between reading the job and the transaction: read it again. */
class ClaimsMoved extends Error {
  constructor(readonly job: JobRecord) {
    super('the job gained a claim while it was being read');
  }
}

/** Enough for any real race: a site only adds a claim when it holds none. */
const MAX_CLAIM_READS = 20;

/** The operation of a claim, when it is really that job's operation for that site. */
function operationOfClaim(
  op: OperationRecord | null | undefined,
  jobId: string,
  siteId: string,
): OperationRecord | null {
  if (!op || op.metadata?.job?.id !== jobId || op.metadata?.site_id !== siteId) return null;
  return op;
}

/**
 * Reads a job and the operations of one site's claims of it, and writes what `decide` says, in one
 * transaction. The operations to read are known from an earlier read of the job; when the job
 * gained a claim of the site meanwhile, the transaction is abandoned (nothing written) and run again.
 */
async function withSiteClaims<T>(
  store: DocumentStore,
  job: JobRecord,
  siteId: string,
  decide: (job: JobRecord, ops: Map<string, OperationRecord | null>) => ReadModifyWriteDecision<T>,
): Promise<T> {
  let known = job;
  for (let attempt = 1; ; attempt++) {
    const opIds = [...new Set(claimsOf(known, siteId).map((claim) => claim.op_id))];
    const keys = [{ collection: JOBS, id: job.id }, ...opIds.map((id) => ({ collection: OPERATIONS, id }))];
    try {
      return await store.readModifyWrite(keys, ([jobDoc, ...opDocs]) => {
        const current = jobDoc as JobRecord | null;
        if (!current) throw new NotFound(`Job ${job.id} not found`);
        if (claimsOf(current, siteId).some((claim) => !opIds.includes(claim.op_id))) {
          throw new ClaimsMoved(current);
        }
        const ops = new Map(
          opIds.map((id, i) => [id, operationOfClaim(opDocs[i] as OperationRecord | null, job.id, siteId)]),
        );
        return decide(current, ops);
      });
    } catch (err) {
      if (!(err instanceof ClaimsMoved) || attempt >= MAX_CLAIM_READS) throw err;
      known = err.job;
    }
  }
}

async function existingJob(store: DocumentStore, jobId: string): Promise<JobRecord> {
  const job = (await store.getById(JOBS, jobId)) as JobRecord | null;
  if (!job) throw new NotFound(`Job ${jobId} not found`);
  return job;
}

/**
 * `site` claims the job: 404 for an unknown job, 403 when the site lacks a capability the job's
 * workflow needs, 409 (`ClaimHeld`) while the site holds a claim of it. Otherwise the new operation
 * `opId` and the job's new claim are written together, and the operation is answered.
 */
export async function claimJob(
  store: DocumentStore,
  jobId: string,
  site: SiteRecord,
  opId: string,
  now: Date,
): Promise<OperationRecord> {
  const job = await existingJob(store, jobId);
  const catalogWorkflow = job.workflow?.id ? await store.getById(WORKFLOWS, job.workflow.id) : null;
  for (const capability of requiredCapabilities(job, catalogWorkflow)) {
    if (!site.capability_ids.includes(capability)) {
      throw new Forbidden(`client site does not have capability ${capability} required to claim job`);
    }
  }
  return withSiteClaims(store, job, site.id, (current, ops) => {
    const held = claimsOf(current, site.id).find((claim) =>
      claimIsHeld(claim, ops.get(claim.op_id) ?? null, now),
    );
    if (held) throw new ClaimHeld(current.id, held.op_id);
    const op = claimOperation(opId, current, site.id, now);
    const claimed: JobRecord = {
      ...current,
      claims: [...(current.claims ?? []), { op_id: opId, site_id: site.id }],
    };
    return {
      writes: [
        { collection: OPERATIONS, docs: [op] },
        { collection: JOBS, docs: [claimed] },
      ],
      value: op,
    };
  });
}

/**
 * The site gives the job back: each of its claims not yet done is marked done and cancelled, and
 * so is the claim's operation (`done: true`, `metadata.cancelled: true`), in one transaction.
 * Claims whose operation finished stay as they are. Answers the updated job; 404 for an unknown job.
 */
export async function releaseJob(store: DocumentStore, jobId: string, siteId: string): Promise<JobRecord> {
  const job = await existingJob(store, jobId);
  return withSiteClaims(store, job, siteId, (current, ops) => {
    const cancelledOps: OperationRecord[] = [];
    const claims = (current.claims ?? []).map((claim): JobClaim => {
      if (claim.site_id !== siteId) return claim;
      const op = ops.get(claim.op_id) ?? null;
      const finished = op ? op.done === true : claim.done === true;
      if (finished) return claim;
      if (op) cancelledOps.push({ ...op, done: true, metadata: { ...op.metadata, cancelled: true } });
      return { ...claim, done: true, cancelled: true };
    });
    const released: JobRecord = { ...current, claims };
    return {
      writes: [
        { collection: OPERATIONS, docs: cancelledOps },
        { collection: JOBS, docs: [released] },
      ],
      value: released,
    };
  });
}
