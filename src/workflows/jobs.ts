/**
 * Jobs: a workflow plus the configuration to run it with, and the claims sites made on it, kept in
 * the DocumentStore collection `jobs` in the original's shape (`id`, `workflow`, `config`,
 * `claims`, `created_at`, `name`, `description`). Claiming and releasing (which write operations
 * too) are in operations.ts.
 */
import type { Doc } from '../store/port.ts';
import { Unprocessable } from '../errors.ts';

export const JOBS = 'jobs';

/** The catalog of workflows (seeded at start); a job's workflow may name one of them. */
export { WORKFLOWS } from './catalog.ts';

/** The workflow a job runs, as the client gave it; `capability_ids` are what a claiming site needs. */
export interface JobWorkflow {
  id: string;
  name?: string;
  description?: string;
  capability_ids?: string[];
  created_at?: string;
}

/** One site's claim of a job: the operation it started, and whether that is done or was cancelled. */
export interface JobClaim {
  op_id: string;
  site_id: string;
  done?: boolean;
  cancelled?: boolean;
}

export interface JobRecord extends Doc {
  id: string;
  workflow: JobWorkflow;
  config: Record<string, unknown>;
  claims: JobClaim[];
  created_at?: string;
  name?: string;
  description?: string;
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  value !== null && typeof value === 'object' && !Array.isArray(value);

function optionalText(source: Record<string, unknown>, name: string, where: string): string | undefined {
  const value = source[name];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string') throw new Unprocessable(`${where}${name} must be a string`);
  return value;
}

function readWorkflow(value: unknown): JobWorkflow {
  if (!isObject(value)) {
    throw new Unprocessable('Invalid job: `workflow` is required and must be an object with an `id`');
  }
  if (typeof value.id !== 'string' || value.id.length === 0) {
    throw new Unprocessable('Invalid job: `workflow.id` is required and must be a non-empty string');
  }
  const workflow: JobWorkflow = { id: value.id };
  const name = optionalText(value, 'name', 'Invalid job: workflow.');
  if (name !== undefined) workflow.name = name;
  const description = optionalText(value, 'description', 'Invalid job: workflow.');
  if (description !== undefined) workflow.description = description;
  if (value.capability_ids !== undefined && value.capability_ids !== null) {
    const ids = value.capability_ids;
    if (!Array.isArray(ids) || !ids.every((c) => typeof c === 'string')) {
      throw new Unprocessable('Invalid job: `workflow.capability_ids` must be an array of strings');
    }
    workflow.capability_ids = [...ids];
  }
  const createdAt = optionalText(value, 'created_at', 'Invalid job: workflow.');
  if (createdAt !== undefined) workflow.created_at = createdAt;
  return workflow;
}

export const CLAIMS_NOT_ACCEPTED =
  'Invalid job: `claims` must be empty or left out when creating a job; a site claims a job with POST /jobs/{job_id}:claim';

/**
 * `claims` of a new job: none. A claim names a site and an operation of its, so only the claiming
 * site may make one (`POST /jobs/{job_id}:claim`); `[]`, as the original's clients send, is accepted.
 */
function readClaims(value: unknown): JobClaim[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) throw new Unprocessable('Invalid job: `claims` must be an array');
  if (value.length > 0) throw new Unprocessable(CLAIMS_NOT_ACCEPTED);
  return [];
}

/**
 * The job a `POST /jobs` body describes, with its minted id and creation time. As the original's
 * JobIn: `workflow` and `config` are required, `name` and `description` optional, `claims` empty
 * if given, other members dropped. 422 naming the member that is wrong.
 */
export function newJob(body: unknown, id: string, now: Date): JobRecord {
  if (!isObject(body)) throw new Unprocessable('Invalid job: the body must be a JSON object');
  const workflow = readWorkflow(body.workflow);
  if (!isObject(body.config))
    throw new Unprocessable('Invalid job: `config` is required and must be an object');
  const job: JobRecord = {
    id,
    workflow,
    config: body.config,
    claims: readClaims(body.claims),
    created_at: now.toISOString(),
  };
  const name = optionalText(body, 'name', 'Invalid job: ');
  if (name !== undefined) job.name = name;
  const description = optionalText(body, 'description', 'Invalid job: ');
  if (description !== undefined) job.description = description;
  return job;
}

/**
 * Capabilities a site needs to claim `job`: those its workflow lists, and those of the catalog
 * workflow of the same id (when the catalog has it), each once, in that order.
 */
export function requiredCapabilities(job: JobRecord, catalogWorkflow: Doc | null): string[] {
  const fromCatalog = Array.isArray(catalogWorkflow?.capability_ids)
    ? (catalogWorkflow.capability_ids as unknown[]).filter((c): c is string => typeof c === 'string')
    : [];
  return [...new Set([...(job.workflow?.capability_ids ?? []), ...fromCatalog])];
}

/** Claims of one site. */
export const claimsOf = (job: JobRecord, siteId: string): JobClaim[] =>
  (job.claims ?? []).filter((claim) => claim.site_id === siteId);
