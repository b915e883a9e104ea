/**
 * A site worker with the typed 2.13.0 SDK: what a compute site runs to do the service's jobs.
 *
 *   BASE_URL=http://localhost:8080 CLIENT_ID=... CLIENT_SECRET=... [JOB_ID=nmdc:sys0...] npm run example:site-worker
 *
 * Logs in with the site client's credentials, lists the jobs its site has not claimed (or takes
 * JOB_ID), claims the first one its site may run, reports progress on the claim's operation,
 * "runs" the job (here: writes a small report of its configuration), registers that report as a
 * GA4GH DRS object, and completes the operation with the object as its result.
 *
 * Without a claimable job it says how to create one (as a site client: POST /jobs; or as an
 * administrator, by giving an object a type that a trigger names) and exits with status 3.
 */
import { createHash } from 'node:crypto';
import { pathToFileURL } from 'node:url';
import { createNmdcClient, type Operation } from '../generated/sdk-2.13.0/index.ts';

export interface SiteWorkerOptions {
  baseUrl: string;
  clientId: string;
  clientSecret: string;
  /** The job to claim; the first claimable job of the site's listing when absent. */
  jobId?: string;
  /** Progress steps reported before completing (at least 1). */
  steps?: number;
  /** Where progress and the result are printed. */
  print?: (line: string) => void;
}

export interface SiteWorkerResult {
  jobId: string;
  operation: Operation;
  objectId: string;
}

/** No job to claim: the caller decides what to tell the user. */
export class NoClaimableJob extends Error {}

/** What the SDK answered when an operation failed, for an error message. */
const failure = (what: string, r: { response: Response; error?: unknown }) =>
  new Error(`${what} failed (${r.response.status}): ${JSON.stringify(r.error)}`);

export async function runSiteWorker(options: SiteWorkerOptions): Promise<SiteWorkerResult> {
  const print = options.print ?? ((line: string) => console.log(line));
  const nmdc = createNmdcClient({ baseUrl: options.baseUrl });

  const login = await nmdc.login({
    body: {
      grant_type: 'client_credentials',
      client_id: options.clientId,
      client_secret: options.clientSecret,
    },
  });
  if (!login.data) throw failure('Login', login);
  nmdc.setToken(login.data.access_token);

  // Candidates: the given job, or the jobs this site has not claimed yet (the listing's default
  // for a site client), first page only.
  let candidates: string[];
  if (options.jobId) {
    candidates = [options.jobId];
  } else {
    const listed = await nmdc.listJobs({ query: { max_page_size: 20 } });
    if (!listed.data) throw failure('Listing jobs', listed);
    candidates = listed.data.resources.map((job) => String(job.id));
  }

  // Claim the first job the site may run: 403 means the site lacks a capability the job's
  // workflow needs, 409 that the site already holds a claim of it.
  let claimed: { jobId: string; operation: Operation } | undefined;
  for (const jobId of candidates) {
    const claim = await nmdc.claimJob({ path: { job_id: jobId } });
    if (claim.data) {
      claimed = { jobId, operation: claim.data };
      break;
    }
    if (claim.response.status !== 403 && claim.response.status !== 409)
      throw failure(`Claiming ${jobId}`, claim);
    print(`skipped ${jobId}: ${JSON.stringify((claim.error as { detail?: unknown } | undefined)?.detail)}`);
  }
  if (!claimed) {
    throw new NoClaimableJob(
      'No job this site may claim. Create one as a site client (POST /jobs with {"workflow": {"id": ...}, "config": {...}}), ' +
        'or give an object a type that a trigger names (PUT /objects/{object_id}/types).',
    );
  }
  const { jobId } = claimed;
  const opId = claimed.operation.id;
  const job = claimed.operation.metadata?.job as { workflow?: { id?: string }; config?: unknown } | undefined;
  print(`claimed job ${jobId} (workflow ${job?.workflow?.id}); operation ${opId}`);

  const steps = Math.max(1, options.steps ?? 3);
  for (let step = 1; step <= steps; step++) {
    const progress = await nmdc.updateOperation({
      path: { op_id: opId },
      body: { metadata: { progress: { step, of: steps, percent: Math.round((100 * step) / (steps + 1)) } } },
    });
    if (!progress.data) throw failure('Reporting progress', progress);
    print(`progress ${step}/${steps} reported`);
  }

  // The job's output: a report of what was run, registered as a DRS object.
  const report = Buffer.from(JSON.stringify({ job_id: jobId, config: job?.config ?? null }, null, 2));
  const created = await nmdc.createObject({
    body: {
      name: `report-${jobId.replace(/[^A-Za-z0-9._-]/g, '_')}.json`,
      description: `Output of job ${jobId}`,
      mime_type: 'application/json',
      size: report.length,
      checksums: [{ type: 'sha256', checksum: createHash('sha256').update(report).digest('hex') }],
      access_methods: [
        { type: 'https', access_url: { url: `https://data.example.org/reports/${opId}.json` } },
      ],
    },
  });
  if (!created.data) throw failure('Registering the output object', created);
  const objectId = created.data.id;
  print(`registered output object ${objectId} (${created.data.self_uri})`);

  const done = await nmdc.updateOperation({
    path: { op_id: opId },
    body: {
      done: true,
      result: { outputs: [objectId] },
      metadata: { progress: { step: steps, of: steps, percent: 100 } },
    },
  });
  if (!done.data) throw failure('Completing the operation', done);
  print(`operation ${opId} done`);
  return { jobId, operation: done.data, objectId };
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const { BASE_URL, CLIENT_ID, CLIENT_SECRET, JOB_ID } = process.env;
  if (!CLIENT_ID || !CLIENT_SECRET) {
    console.error(
      'Set CLIENT_ID and CLIENT_SECRET (POST /sites, then POST /sites/{site_id}:generateCredentials)',
    );
    process.exit(2);
  }
  runSiteWorker({
    baseUrl: BASE_URL ?? 'http://localhost:8080',
    clientId: CLIENT_ID,
    clientSecret: CLIENT_SECRET,
    ...(JOB_ID ? { jobId: JOB_ID } : {}),
  }).catch((err: unknown) => {
    console.error(err instanceof Error ? err.message : err);
    process.exit(err instanceof NoClaimableJob ? 3 : 1);
  });
}
