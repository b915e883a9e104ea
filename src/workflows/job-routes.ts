/**
 * `GET/POST /jobs`, `GET /jobs/{job_id}`, `POST /jobs/{job_id}:claim`, `POST /jobs/{job_id}:release`,
 * `GET /operations`, `GET/PATCH /operations/{op_id}`: how site clients find work, claim it and
 * report on it. Reads are public; writes are for site clients, acting for their site.
 */
import express from 'express';
import type { Services } from '../services.ts';
import type { Principal } from '../accounts/principal.ts';
import type { Accounts } from '../accounts/accounts.ts';
import { guardsOf } from '../http/guards.ts';
import type { SiteRecord } from '../accounts/records.ts';
import type { Filter } from '../store/port.ts';
import { Forbidden, NotFound } from '../errors.ts';
import { parseJsonFilter } from '../query/guard/index.ts';
import { tokenPage } from '../metadata/token-pages.ts';
import { listingParams } from '../http/request-reading/listing-params.ts';
import { mintSystemId } from '../objects/system-ids.ts';
import { JOBS, newJob } from './jobs.ts';
import { OPERATIONS, claimJob, patchOperation, readOperationPatch, releaseJob } from './operations.ts';

/** The site a site client acts for (the guard let only site clients through). */
async function callingSite(accounts: Accounts, principal: Principal): Promise<SiteRecord> {
  const site = principal.siteId ? await accounts.getSite(principal.siteId) : null;
  if (!site) throw new Forbidden(`The site ${principal.siteId ?? ''} of this client no longer exists`);
  return site;
}

export function jobsRouter(deps: Services): express.Router {
  const { store, accounts } = deps;
  const auth = guardsOf(deps.auth);
  const router = express.Router();

  /** One page of a collection, as every `GET` listing of the original answers it. */
  const listing = (collection: string, req: express.Request, defaultFilter?: Filter) =>
    tokenPage(
      store.state,
      collection,
      listingParams(req.query, (text) =>
        text === undefined && defaultFilter ? defaultFilter : parseJsonFilter(text),
      ),
      (filter, page) => store.find(collection, filter, page),
    );

  router.get('/jobs', auth.identifyCaller, async (req, res) => {
    const principal = res.locals.principal as Principal | undefined;
    // As the original: a site client asking without a filter sees the jobs its site has not claimed.
    const unclaimedBySite =
      principal?.kind === 'site_client' && principal.siteId
        ? { 'claims.site_id': { $ne: principal.siteId } }
        : undefined;
    res.json(await listing(JOBS, req, unclaimedBySite));
  });

  router.post('/jobs', auth.requireSiteClient, async (req, res) => {
    const job = newJob(req.body, mintSystemId(), new Date());
    await store.upsertMany(JOBS, [job]);
    res.status(201).json(job);
  });

  // The colon verbs are registered before `/jobs/:job_id`; ids such as `nmdc:sys0...` keep their colon.
  router.post('/jobs/:job_id\\:claim', auth.requireSiteClient, async (req, res) => {
    const site = await callingSite(accounts, res.locals.principal as Principal);
    // A held claim answers 409 with the operation's `id` beside `detail`: nmdc_automation reads it.
    res.json(await claimJob(store, String(req.params.job_id), site, mintSystemId(), new Date()));
  });

  router.post('/jobs/:job_id\\:release', auth.requireSiteClient, async (req, res) => {
    const site = await callingSite(accounts, res.locals.principal as Principal);
    res.json(await releaseJob(store, String(req.params.job_id), site.id));
  });

  router.get('/jobs/:job_id', async (req, res) => {
    const jobId = String(req.params.job_id);
    const job = await store.getById(JOBS, jobId);
    if (!job) throw new NotFound(`Job ${jobId} not found`);
    res.json(job);
  });

  router.get('/operations', async (req, res) => {
    res.json(await listing(OPERATIONS, req));
  });

  router.get('/operations/:op_id', async (req, res) => {
    const opId = String(req.params.op_id);
    const op = await store.getById(OPERATIONS, opId);
    if (!op) throw new NotFound(`Operation ${opId} not found`);
    res.json(op);
  });

  router.patch('/operations/:op_id', auth.requireSiteClient, async (req, res) => {
    const principal = res.locals.principal as Principal;
    const patch = readOperationPatch(req.body);
    res.json(
      await patchOperation(store, String(req.params.op_id), principal.siteId ?? '', patch, new Date()),
    );
  });

  return router;
}
