/**
 * The whole site flow through the generated 2.13.0 SDK, against the service listening on
 * 127.0.0.1: an administrator sets up a site with capabilities and its client credentials; the
 * site registers a raw-reads object and types it, which fires the catalog's trigger and creates a
 * job; `examples/site-worker.ts` then claims that job, reports progress, registers its output and
 * completes the operation. What every step wrote is read back through the SDK.
 */
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { setBcryptCost } from '../../src/accounts/index.ts';
import { startTestServer, type TestServer } from '../support/server.ts';
import { createNmdcClient } from '../../generated/sdk-2.13.0/index.ts';
import { NoClaimableJob, runSiteWorker } from '../../examples/site-worker.ts';

setBcryptCost(4);

const ADMIN = { username: 'worker-admin', password: 'site-worker-admin-password-5521' };
const SITE = 'worker-lab';
/** A type the seed catalog's trigger turns into a job of workflow `metag-1.0.0`. */
const READS_TYPE = 'metagenome_raw_paired_end_reads';
const TRIGGERED_WORKFLOW = 'metag-1.0.0';

let server: TestServer;
let credentials: { client_id: string; client_secret: string };

const bytes = Buffer.from('@read1\nACGT\n+\nFFFF\n');

beforeAll(async () => {
  server = await startTestServer({ ADMIN_USERNAME: ADMIN.username, ADMIN_PASSWORD: ADMIN.password });
  const admin = createNmdcClient({ baseUrl: server.url });
  const login = await admin.login({ body: { grant_type: 'password', ...ADMIN } });
  admin.setToken(login.data!.access_token);
  const capabilities = (await admin.listCapabilities()).data!.map((c) => c.id);
  expect(capabilities.length).toBeGreaterThan(2);
  const site = await admin.createSite({ body: { id: SITE, capability_ids: [] } });
  expect(site.data).toEqual({ id: SITE, capability_ids: [] });
  // Two of the catalog's capabilities, and not a third one that a later job asks for.
  const given = await admin.replaceSiteCapabilities({
    path: { site_id: SITE },
    body: capabilities.slice(0, 2),
  });
  expect(given.data).toEqual(capabilities.slice(0, 2));
  const generated = await admin.generateSiteCredentials({ path: { site_id: SITE } });
  credentials = generated.data!;
}, 60_000);
afterAll(async () => server?.close());

describe('a site works a job through the SDK', () => {
  let inputId: string;
  let triggeredJobId: string;

  it('registers its input as a DRS object and types it, and the trigger creates one job for it', async () => {
    const site = createNmdcClient({ baseUrl: server.url });
    const login = await site.login({ body: { grant_type: 'client_credentials', ...credentials } });
    site.setToken(login.data!.access_token);
    const created = await site.createObject({
      body: {
        name: 'reads.fastq',
        mime_type: 'text/plain',
        size: bytes.length,
        checksums: [{ type: 'sha256', checksum: createHash('sha256').update(bytes).digest('hex') }],
        access_methods: [{ type: 'https', access_url: { url: 'https://data.example.org/reads.fastq' } }],
      },
    });
    expect(created.response.status).toBe(201);
    inputId = created.data!.id;
    const host = new URL(server.url).host;
    expect(created.data!.self_uri).toBe(`drs://${host}/${inputId}`);

    const typed = await site.replaceObjectTypes({ path: { object_id: inputId }, body: [READS_TYPE] });
    expect(typed.data).toMatchObject({ id: inputId, types: [READS_TYPE] });
    // Typing it again fires nothing more.
    await site.replaceObjectTypes({ path: { object_id: inputId }, body: [READS_TYPE] });

    const jobs = await site.listJobs({ query: { filter: JSON.stringify({ 'config.object_id': inputId }) } });
    expect(jobs.data!.resources).toHaveLength(1);
    const job = jobs.data!.resources[0]!;
    expect(job).toMatchObject({
      workflow: { id: TRIGGERED_WORKFLOW },
      config: { object_id: inputId },
      claims: [],
    });
    triggeredJobId = String(job.id);
  });

  it('the worker claims it, reports progress, registers its output and completes the operation', async () => {
    const printed: string[] = [];
    const result = await runSiteWorker({
      baseUrl: server.url,
      clientId: credentials.client_id,
      clientSecret: credentials.client_secret,
      steps: 2,
      print: (line) => printed.push(line),
    });
    expect(result.jobId).toBe(triggeredJobId);
    expect(result.operation).toMatchObject({
      done: true,
      result: { outputs: [result.objectId] },
      metadata: {
        site_id: SITE,
        job: { id: triggeredJobId, workflow: { id: TRIGGERED_WORKFLOW } },
        progress: { step: 2, of: 2, percent: 100 },
      },
    });
    expect(printed).toEqual([
      `claimed job ${triggeredJobId} (workflow ${TRIGGERED_WORKFLOW}); operation ${result.operation.id}`,
      'progress 1/2 reported',
      'progress 2/2 reported',
      expect.stringMatching(new RegExp(`^registered output object ${result.objectId} \\(drs://`)),
      `operation ${result.operation.id} done`,
    ]);

    // Read back, anonymously: the job's claim is done, the operation and the output are as reported.
    const reader = createNmdcClient({ baseUrl: server.url });
    const job = await reader.getJob({ path: { job_id: triggeredJobId } });
    expect(job.data!.claims).toEqual([{ op_id: result.operation.id, site_id: SITE, done: true }]);
    const op = await reader.getOperation({ path: { op_id: result.operation.id } });
    expect(op.data).toEqual(result.operation);
    const output = await reader.getDrsObject({ path: { object_id: result.objectId } });
    expect(output.data).toMatchObject({
      id: result.objectId,
      mime_type: 'application/json',
      description: `Output of job ${triggeredJobId}`,
    });
  });

  it('skips a job whose workflow needs a capability the site lacks, and finds nothing else to claim', async () => {
    const site = createNmdcClient({ baseUrl: server.url });
    const login = await site.login({ body: { grant_type: 'client_credentials', ...credentials } });
    site.setToken(login.data!.access_token);
    const needsMore = await site.createJob({
      body: { workflow: { id: 'needs-gpu', capability_ids: ['gpu-nodes'] }, config: { input: inputId } },
    });
    expect(needsMore.response.status).toBe(201);
    const printed: string[] = [];
    await expect(
      runSiteWorker({
        baseUrl: server.url,
        clientId: credentials.client_id,
        clientSecret: credentials.client_secret,
        print: (line) => printed.push(line),
      }),
    ).rejects.toBeInstanceOf(NoClaimableJob);
    expect(printed).toEqual([
      `skipped ${needsMore.data!.id}: "client site does not have capability gpu-nodes required to claim job"`,
    ]);
  });
});
