/**
 * `/wf_file_staging/...`: the file staging records of the workflow automation (Globus tasks, JGI
 * samples, JGI sequencing projects), each endpoint of the original 2.13.0 behind the
 * `/wf_file_staging` allowance (runtime administrators always pass).
 */
import express, { type Request, type Response } from 'express';
import type { Services } from '../services.ts';
import type { Principal } from '../accounts/principal.ts';
import { guardsOf } from '../http/guards.ts';
import { Forbidden } from '../errors.ts';
import { tokenPage } from '../metadata/token-pages.ts';
import { listingParams } from '../http/request-reading/listing-params.ts';
import {
  GLOBUS_TASKS,
  GLOBUS_TASK_STATUSES,
  JDP_FILE_STATUSES,
  JGI_SAMPLES,
  JGI_SEQUENCING_PROJECTS,
  StagingRecords,
  publicStagingRecord,
  readStagingBody,
  stagingFilter,
} from './file-staging.ts';

const ACTION = '/wf_file_staging';

export function fileStagingRouter(deps: Services): express.Router {
  const { requireUser } = guardsOf(deps.auth);
  const router = express.Router();
  const globusTasks = new StagingRecords(deps.store, GLOBUS_TASKS);
  const jgiSamples = new StagingRecords(deps.store, JGI_SAMPLES);
  const sequencingProjects = new StagingRecords(deps.store, JGI_SEQUENCING_PROJECTS);

  /** Every endpoint here: logged in, and holding the allowance (the original's 403 wording). */
  const allowed: express.RequestHandler = async (_req, res, next) => {
    if (!(await deps.allowances.permits(res.locals.principal as Principal, ACTION))) {
      throw new Forbidden('Only specific users are allowed to issue wf_file_staging commands.');
    }
    next();
  };
  const guards = [requireUser, allowed];

  /** The original accepts status words it does not know and only logs them; so does this service. */
  function noteUnknownStatus(req: Request, field: string, value: unknown, known: string[]): void {
    if (typeof value === 'string' && !known.includes(value)) {
      req.log?.warn(
        { field, value: value.slice(0, 100) },
        'file staging: status word not among the known ones',
      );
    }
  }

  async function list(records: StagingRecords, req: Request, res: Response): Promise<void> {
    const principal = res.locals.principal as Principal;
    const page = await tokenPage(
      deps.store.state,
      `${records.kind.collection} for ${principal.kind} ${principal.subject}`,
      listingParams(req.query, stagingFilter),
      (filter, page) => records.find(filter, page),
    );
    res.json({ ...page, resources: page.resources.map(publicStagingRecord) });
  }

  router.get('/wf_file_staging/globus_tasks', ...guards, (req, res) => list(globusTasks, req, res));
  router.post('/wf_file_staging/globus_tasks', ...guards, async (req, res) => {
    const fields = readStagingBody(GLOBUS_TASKS, req.body, false);
    noteUnknownStatus(req, 'task_status', fields.task_status, GLOBUS_TASK_STATUSES);
    res.status(201).json(publicStagingRecord(await globusTasks.create(fields)));
  });
  router.get('/wf_file_staging/globus_tasks/:task_id', ...guards, async (req, res) => {
    res.json(publicStagingRecord(await globusTasks.get(String(req.params.task_id))));
  });
  router.patch('/wf_file_staging/globus_tasks/:task_id', ...guards, async (req, res) => {
    const fields = readStagingBody(GLOBUS_TASKS, req.body, true);
    res.json(publicStagingRecord(await globusTasks.patch(String(req.params.task_id), fields)));
  });

  router.get('/wf_file_staging/jgi_samples', ...guards, (req, res) => list(jgiSamples, req, res));
  router.post('/wf_file_staging/jgi_samples', ...guards, async (req, res) => {
    const fields = readStagingBody(JGI_SAMPLES, req.body, false);
    noteUnknownStatus(req, 'jdp_file_status', fields.jdp_file_status, JDP_FILE_STATUSES);
    noteUnknownStatus(req, 'globus_file_status', fields.globus_file_status, GLOBUS_TASK_STATUSES);
    res.status(201).json(publicStagingRecord(await jgiSamples.create(fields)));
  });
  router.patch('/wf_file_staging/jgi_samples/:jdp_file_id', ...guards, async (req, res) => {
    const fields = readStagingBody(JGI_SAMPLES, req.body, true);
    res.json(publicStagingRecord(await jgiSamples.patch(String(req.params.jdp_file_id), fields)));
  });

  router.get('/wf_file_staging/jgi_sequencing_projects', ...guards, (req, res) =>
    list(sequencingProjects, req, res),
  );
  router.post('/wf_file_staging/jgi_sequencing_projects', ...guards, async (req, res) => {
    const fields = readStagingBody(JGI_SEQUENCING_PROJECTS, req.body, false);
    res.status(201).json(publicStagingRecord(await sequencingProjects.create(fields)));
  });
  router.get(
    '/wf_file_staging/jgi_sequencing_projects/:sequencing_project_name',
    ...guards,
    async (req, res) => {
      res.json(publicStagingRecord(await sequencingProjects.get(String(req.params.sequencing_project_name))));
    },
  );

  return router;
}
