/**
 * Runs: `POST /runs` (request a run of a workflow), `GET /runs/{run_id}` (what became of a run, a
 * metadata submission or a requested one), and `GET/POST /runs/{run_id}/events` (its OpenLineage
 * events). For the caller who started a run, runtime administrators, and the site that carries it
 * out (run-events.ts says who may do what).
 */
import express from 'express';
import type { Services } from '../services.ts';
import type { Principal } from '../accounts/principal.ts';
import { guardsOf } from '../http/guards.ts';
import { Forbidden, NotFound, Unprocessable } from '../errors.ts';
import { tokenPage } from '../metadata/token-pages.ts';
import { queryInteger, queryText } from '../http/request-reading/values.ts';
import { getRun, publicRun } from './runs.ts';
import {
  READ_RUN_FORBIDDEN,
  RUN_EVENT_TYPES,
  findRunEvents,
  mayReadRun,
  publicEvent,
  recordRunEvent,
  requestRun,
  type RunEvent,
} from './run-events.ts';

/** The catalog of workflows: `POST /runs` names one as its `job_id`, as the original does. */
const WORKFLOWS = 'workflows';

const isObject = (value: unknown): value is Record<string, unknown> =>
  value !== null && typeof value === 'object' && !Array.isArray(value);

function stringList(value: unknown, name: string): string[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value) || !value.every((v) => typeof v === 'string')) {
    throw new Unprocessable(`${name} must be an array of strings`);
  }
  return value;
}

/**
 * A field the original reads from the query string (its RunEvent and RunUserSpec are
 * dependencies, so their scalar fields are query parameters) and this service also from the body.
 */
function bodyOrQuery(body: Record<string, unknown>, query: express.Request['query'], name: string): unknown {
  return body[name] ?? queryText(query[name]);
}

function requiredText(value: unknown, name: string): string {
  if (typeof value !== 'string' || value === '') {
    throw new Unprocessable(`${name} is required: a non-empty string, in the body (or as a query parameter)`);
  }
  return value;
}

/** The posted event for run `runId`, checked as the original's RunEvent model checks it. */
function eventOf(req: express.Request, runId: string): RunEvent {
  const body = isObject(req.body) ? req.body : {};
  const run = body.run;
  if (!isObject(run) || typeof run.id !== 'string') throw new Unprocessable('run.id is required: a string');
  if (run.id !== runId) {
    throw new Unprocessable(`run.id (${run.id}) does not match the run_id in the URL (${runId})`);
  }
  if (run.facets !== undefined && run.facets !== null && !isObject(run.facets)) {
    throw new Unprocessable('run.facets must be an object');
  }
  const job = body.job;
  if (!isObject(job)) throw new Unprocessable('job is required: {id, description, producer, schemaURL}');
  const type = bodyOrQuery(body, req.query, 'type');
  if (!RUN_EVENT_TYPES.includes(type as RunEvent['type'])) {
    throw new Unprocessable(`type must be one of ${RUN_EVENT_TYPES.join(', ')}; got ${JSON.stringify(type)}`);
  }
  return {
    producer: requiredText(bodyOrQuery(body, req.query, 'producer'), 'producer'),
    schemaURL: requiredText(bodyOrQuery(body, req.query, 'schemaURL'), 'schemaURL'),
    run:
      run.facets === undefined
        ? { id: run.id }
        : { id: run.id, facets: run.facets as Record<string, unknown> },
    job: {
      id: requiredText(job.id, 'job.id'),
      description: requiredText(job.description, 'job.description'),
      producer: requiredText(job.producer, 'job.producer'),
      schemaURL: requiredText(job.schemaURL, 'job.schemaURL'),
    },
    type: type as RunEvent['type'],
    time: requiredText(bodyOrQuery(body, req.query, 'time'), 'time'),
    inputs: stringList(body.inputs, 'inputs'),
    outputs: stringList(body.outputs, 'outputs'),
  };
}

export function runsRouter(deps: Services): express.Router {
  const { store } = deps;
  const auth = guardsOf(deps.auth);
  const router = express.Router();

  router.post('/runs', auth.requireUser, async (req, res) => {
    const body = isObject(req.body) ? req.body : {};
    const jobId = bodyOrQuery(body, req.query, 'job_id');
    if (typeof jobId !== 'string' || jobId === '') {
      throw new Unprocessable(
        'job_id is required: the id of a workflow, in the body (or as a query parameter)',
      );
    }
    if (body.run_config !== undefined && body.run_config !== null && !isObject(body.run_config)) {
      throw new Unprocessable('run_config must be an object');
    }
    const workflow = await store.getById(WORKFLOWS, jobId);
    if (!workflow)
      throw new NotFound(`No workflow with id ${jobId}: job_id names a workflow (see GET /workflows)`);
    const run = await requestRun(
      store,
      {
        workflow: {
          id: workflow.id,
          description: String(workflow.description ?? workflow.name ?? workflow.id),
        },
        runConfig: (body.run_config as Record<string, unknown> | undefined) ?? {},
        inputs: stringList(body.inputs, 'inputs'),
      },
      res.locals.principal as Principal,
    );
    res.json(publicRun(run));
  });

  /** The run at `:run_id` when the caller may read it: 404 or 403 otherwise. */
  async function readableRun(req: express.Request, res: express.Response) {
    const runId = String(req.params.run_id);
    const run = await getRun(store, runId);
    if (!run) throw new NotFound(`Run ${runId} not found`);
    if (!mayReadRun(res.locals.principal as Principal, run)) throw new Forbidden(READ_RUN_FORBIDDEN);
    return run;
  }

  router.get('/runs/:run_id/events', auth.requireUser, async (req, res) => {
    const run = await readableRun(req, res);
    const page = await tokenPage(
      store.state,
      `events of run ${run.id}`,
      {
        filter: () => ({}),
        max_page_size: queryInteger(req.query.max_page_size, 20),
        page_token: queryText(req.query.page_token),
      },
      (_filter, page) => findRunEvents(store, run.id, page),
    );
    res.json({ ...page, resources: page.resources.map(publicEvent) });
  });

  router.post('/runs/:run_id/events', auth.requireUser, async (req, res) => {
    const event = eventOf(req, String(req.params.run_id));
    res.json(await recordRunEvent(store, event, res.locals.principal as Principal));
  });

  router.get('/runs/:run_id', auth.requireUser, async (req, res) => {
    res.json(publicRun(await readableRun(req, res)));
  });

  return router;
}
