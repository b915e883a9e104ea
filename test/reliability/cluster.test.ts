/**
 * WORKERS > 1: several server processes share the port and the store. Every request below opens
 * its own connection, so the primary spreads them over the workers. One WORKERS=2 server (with the
 * demo data and an administrator) serves every test of this file, started once (three processes
 * to start is the slow part): continuations and tokens made by one process work on the others;
 * the login limit holds across them; job claims and minted ids stay consistent when both processes
 * answer at once; then a dead worker is replaced and SIGTERM stops them all.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEMO_DATA_SET } from '../../src/startup.ts';
import { loginLimits } from '../../src/auth/login-rate-limit.ts';
import {
  form,
  inParallel,
  kill,
  requestOnFreshConnection,
  startClusterAsAdmin,
  type ServerProcess,
  workersOf,
} from './process-faults.ts';

const ADMIN = { ADMIN_USERNAME: 'cluster-admin', ADMIN_PASSWORD: 'cluster admin password' };

const send = requestOnFreshConnection;

async function waitFor(check: () => boolean): Promise<void> {
  for (let i = 0; i < 300 && !check(); i++) await new Promise((r) => setTimeout(r, 100));
  expect(check()).toBe(true);
}

let dir: string;
let server: ServerProcess;
/** JSON request headers carrying the administrator's token. */
let asAdmin: Record<string, string>;
beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cluster-'));
  ({ server, asAdmin } = await startClusterAsAdmin(dir, ADMIN, { DEMO_DATA: 'true' }));
  await waitFor(() => workersOf(server).length === 2);
}, 120_000);
afterAll(async () => {
  if (server && server.child.exitCode === null) await kill(server);
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

/** A site with a client logged in (`client_credentials`): its JSON request headers. */
async function siteClient(site: string, body: Record<string, unknown>): Promise<Record<string, string>> {
  const created = await send(`${server.url}/sites`, {
    method: 'POST',
    headers: asAdmin,
    body: JSON.stringify({ id: site, ...body }),
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
  return { authorization: `Bearer ${login.body.access_token}`, 'content-type': 'application/json' };
}

describe('several server processes (WORKERS=2)', () => {
  it('loads the demo data once and pages through it with cursors across processes', async () => {
    const ids: string[] = [];
    let token: string | undefined;
    for (let page = 0; page < 20 && (page === 0 || token); page++) {
      const res = await send(
        `${server.url}/nmdcschema/biosample_set?max_page_size=15&projection=id${token ? `&page_token=${token}` : ''}`,
      );
      expect(res.status).toBe(200);
      ids.push(...res.body.resources.map((r: { id: string }) => r.id));
      token = res.body.next_page_token ?? undefined;
    }
    expect(ids).toHaveLength(DEMO_DATA_SET.biosamples);
    expect(new Set(ids).size).toBe(DEMO_DATA_SET.biosamples);
    expect(ids).toEqual([...ids].sort());
  });

  it('accepts a token issued by one process on every process', async () => {
    const issued = await send(`${server.url}/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        grant_type: 'password',
        username: ADMIN.ADMIN_USERNAME,
        password: ADMIN.ADMIN_PASSWORD,
      }).toString(),
    });
    expect(issued.status).toBe(200);
    for (let i = 0; i < 6; i++) {
      const me = await send(`${server.url}/users/me`, {
        headers: { authorization: `Bearer ${issued.body.access_token}` },
      });
      expect(me.status).toBe(200);
      expect(me.body.username).toBe(ADMIN.ADMIN_USERNAME);
    }
  });
});

/**
 * The login limit per account and address (10 unsuccessful attempts per window) holds across the
 * server processes: counted per process, eleven attempts would leave each worker below its limit.
 */
describe('login limits with WORKERS=2', () => {
  const login = (username: string, password: string) =>
    send(`${server.url}/token`, form({ grant_type: 'password', username, password }));

  it('refuses the eleventh unsuccessful attempt for an account, whichever process answers', async () => {
    const limit = loginLimits.failuresPerAccountAndAddress;
    for (let i = 0; i < limit; i++) {
      const answer = await login('cluster-target', `wrong guess ${i}`);
      expect(answer).toEqual({ status: 401, body: { detail: 'Incorrect username or password' } });
    }
    for (let i = 0; i < 4; i++) {
      const answer = await login('cluster-target', `wrong guess ${limit + i}`);
      expect(answer).toEqual({
        status: 429,
        body: {
          detail: 'Too many failed login attempts for this account from this address. Try again later.',
        },
      });
    }
    // Other accounts log in as before.
    expect((await login(ADMIN.ADMIN_USERNAME, ADMIN.ADMIN_PASSWORD)).status).toBe(200);
  });
});

/**
 * Claims stay consistent when two sites claim the same jobs at once through both processes: per
 * job and site exactly one claim wins and the others get 409 naming the winner's operation; every
 * claim in a job has its operation and every operation is in its job's claims.
 */
const SITES = ['claims-lab-a', 'claims-lab-b'];
const JOBS = 40;
/** Claims each site sends for each job, all at once. */
const CLAIMS_PER_SITE_AND_JOB = 4;

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
  /** Bearer headers of each site's client. */
  const clients = new Map<string, Record<string, string>>();
  const jobIds: string[] = [];

  beforeAll(async () => {
    for (const site of SITES) clients.set(site, await siteClient(site, { capability_ids: ['assembly'] }));
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
  }, 60_000);
});

/**
 * Minting through both processes at once never hands out one id twice: the store's
 * insert-if-absent decides between processes.
 */
describe('minting on a WORKERS=2 server', () => {
  let client: Record<string, string>;
  beforeAll(async () => {
    client = await siteClient('cluster-lab', {});
  }, 60_000);

  it('answers 60 parallel mints of 20 with 1200 distinct ids, each of which resolves', async () => {
    const answers = await inParallel(
      16,
      Array.from(
        { length: 60 },
        (_, i) => () =>
          send(`${server.url}/pids/mint`, {
            method: 'POST',
            headers: client,
            body: JSON.stringify({
              schema_class: { id: i % 2 ? 'nmdc:Biosample' : 'nmdc:DataObject' },
              how_many: 20,
            }),
          }),
      ),
    );
    for (const answer of answers) expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    const ids = answers.flatMap((a) => a.body as string[]);
    expect(ids).toHaveLength(1200);
    expect(new Set(ids).size).toBe(1200);

    const resolved = await inParallel(
      16,
      ids.map((id) => () => send(`${server.url}/pids/resolve/${id}`, { headers: client })),
    );
    for (const [i, answer] of resolved.entries()) {
      expect(answer.status, ids[i]).toBe(200);
      expect(answer.body).toMatchObject({ id: ids[i], status: 'draft', bindings: null });
    }
  }, 120_000);
});

describe('a worker that dies, and SIGTERM (WORKERS=2)', () => {
  it('replaces a worker that dies and keeps serving', async () => {
    const [victim] = workersOf(server);
    process.kill(victim!, 'SIGKILL');
    await waitFor(() => {
      const now = workersOf(server);
      return now.length === 2 && !now.includes(victim!);
    });
    for (let i = 0; i < 4; i++) {
      const res = await send(`${server.url}/studies?per_page=2`);
      expect(res.status).toBe(200);
      expect(res.body.meta.count).toBe(DEMO_DATA_SET.studies);
    }
  });

  it('stops every process on SIGTERM and exits 0', async () => {
    const workers = workersOf(server);
    expect(await kill(server, 'SIGTERM')).toBe(0);
    for (const pid of workers) expect(fs.existsSync(`/proc/${pid}`)).toBe(false);
  });
});
