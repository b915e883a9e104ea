/**
 * Claims stay consistent when two sites claim the same jobs at once through two server processes
 * (WORKERS=2, every request on its own connection so the primary spreads them over the workers):
 * per job and site exactly one claim wins and the others get 409 naming the winner's operation;
 * every claim in a job has its operation and every operation is in its job's claims.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  kill,
  type ServerProcess,
  requestOnFreshConnection,
  startClusterAsAdmin,
  form,
  inParallel,
} from './process-faults.ts';

const ADMIN = { ADMIN_USERNAME: 'claims-cluster-admin', ADMIN_PASSWORD: 'Hq3-lagoon-ember-57-falcon' };
const SITES = ['claims-lab-a', 'claims-lab-b'];
const JOBS = 40;
/** Claims each site sends for each job, all at once. */
const CLAIMS_PER_SITE_AND_JOB = 4;

const send = requestOnFreshConnection;

/** Shuffled copy (so claims of one job and site are spread over time and processes). */
function shuffled<T>(items: T[]): T[] {
  const out = [...items];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

interface Claim {
  op_id: string;
  site_id: string;
  done?: boolean;
  cancelled?: boolean;
}

describe('job claims on a WORKERS=2 server', () => {
  let dir: string;
  let server: ServerProcess;
  /** Bearer headers of each site's client. */
  const clients = new Map<string, Record<string, string>>();
  const jobIds: string[] = [];

  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'claims-cluster-'));
    let asAdmin: Record<string, string>;
    ({ server, asAdmin } = await startClusterAsAdmin(dir, ADMIN));
    for (const site of SITES) {
      const created = await send(`${server.url}/sites`, {
        method: 'POST',
        headers: asAdmin,
        body: JSON.stringify({ id: site, capability_ids: ['assembly'] }),
      });
      expect(created.status).toBe(201);
      const credentials = await send(`${server.url}/sites/${site}:generateCredentials`, {
        method: 'POST',
        headers: asAdmin,
      });
      const login = await send(
        `${server.url}/token`,
        form({ grant_type: 'client_credentials', ...credentials.body }),
      );
      expect(login.status).toBe(200);
      clients.set(site, {
        authorization: `Bearer ${login.body.access_token}`,
        'content-type': 'application/json',
      });
    }
    const made = await inParallel(
      8,
      Array.from(
        { length: JOBS },
        (_, i) => () =>
          send(`${server.url}/jobs`, {
            method: 'POST',
            headers: clients.get(SITES[i % 2]!)!,
            body: JSON.stringify({
              workflow: { id: 'Metagenome Assembly: v1.0.9', capability_ids: ['assembly'] },
              config: { n: i },
            }),
          }),
      ),
    );
    for (const res of made) {
      expect(res.status).toBe(201);
      jobIds.push(res.body.id);
    }
  }, 120_000);

  afterAll(async () => {
    if (server && server.child.exitCode === null) await kill(server);
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  it('grants exactly one claim per job and site, answers the rest 409 with the winner, and keeps jobs and operations in step', async () => {
    const attempts = shuffled(
      jobIds.flatMap((jobId) =>
        SITES.flatMap((site) => Array.from({ length: CLAIMS_PER_SITE_AND_JOB }, () => ({ jobId, site }))),
      ),
    );
    const answers = await inParallel(
      32,
      attempts.map(({ jobId, site }) => async () => ({
        jobId,
        site,
        res: await send(`${server.url}/jobs/${jobId}:claim`, { method: 'POST', headers: clients.get(site)! }),
      })),
    );

    for (const jobId of jobIds) {
      for (const site of SITES) {
        const mine = answers.filter((a) => a.jobId === jobId && a.site === site);
        const won = mine.filter((a) => a.res.status === 200);
        expect(won, `${jobId} ${site}: ${mine.map((a) => a.res.status).join(',')}`).toHaveLength(1);
        const winner = won[0]!.res.body;
        expect(winner.metadata).toMatchObject({ site_id: site, job: { id: jobId } });
        for (const lost of mine.filter((a) => a.res.status !== 200)) {
          expect(lost.res.status).toBe(409);
          expect(lost.res.body.id).toBe(winner.id);
          expect(lost.res.body.detail).toContain(winner.id);
        }
      }
    }

    // Every claim has its operation, and every operation is in its job's claims, once.
    const jobs = await send(`${server.url}/jobs?max_page_size=0&filter=${encodeURIComponent('{}')}`);
    const ops = await send(`${server.url}/operations?max_page_size=0`);
    expect(jobs.status).toBe(200);
    expect(ops.status).toBe(200);
    const opsById = new Map<string, { id: string; metadata: { site_id: string; job: { id: string } } }>(
      ops.body.resources.map((op: { id: string }) => [op.id, op]),
    );
    expect(ops.body.resources).toHaveLength(JOBS * SITES.length);
    expect(jobs.body.resources).toHaveLength(JOBS);
    const claimed = new Set<string>();
    for (const job of jobs.body.resources as Array<{ id: string; claims: Claim[] }>) {
      expect(job.claims.map((c) => c.site_id).sort()).toEqual(SITES);
      for (const claim of job.claims) {
        const op = opsById.get(claim.op_id);
        expect(op, `${job.id} claim ${claim.op_id}`).toBeDefined();
        expect(op!.metadata.site_id).toBe(claim.site_id);
        expect(op!.metadata.job.id).toBe(job.id);
        claimed.add(claim.op_id);
      }
    }
    expect(claimed.size).toBe(opsById.size);
  }, 180_000);

  it('after a release, concurrent re-claims by the releasing site again grant exactly one', async () => {
    const jobId = jobIds[0]!;
    const [site] = SITES;
    const headers = clients.get(site!)!;
    expect((await send(`${server.url}/jobs/${jobId}:release`, { method: 'POST', headers })).status).toBe(200);
    const answers = await Promise.all(
      Array.from({ length: 12 }, () =>
        send(`${server.url}/jobs/${jobId}:claim`, { method: 'POST', headers }),
      ),
    );
    const won = answers.filter((a) => a.status === 200);
    expect(won).toHaveLength(1);
    for (const lost of answers.filter((a) => a.status !== 200)) {
      expect(lost.status).toBe(409);
      expect(lost.body.id).toBe(won[0]!.body.id);
    }
    const job = await send(`${server.url}/jobs/${jobId}`);
    const mine = (job.body.claims as Claim[]).filter((c) => c.site_id === site);
    expect(mine).toHaveLength(2);
    expect(mine[0]).toMatchObject({ done: true, cancelled: true });
    expect(mine[1]).toEqual({ op_id: won[0]!.body.id, site_id: site });
  }, 180_000);
});
