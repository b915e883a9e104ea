/**
 * `GET /runs/{run_id}`: what became of a run (a metadata submission), for the caller who started
 * it and for runtime administrators.
 */
import express from 'express';
import type { DocumentStore } from '../store/port.ts';
import type { Auth, Principal } from '../auth/index.ts';
import { Forbidden, NotFound } from '../http/errors.ts';
import { getRun } from './runs.ts';

export function runsRouter(store: DocumentStore, auth: Pick<Auth, 'requireUser'>): express.Router {
  const router = express.Router();
  router.get('/runs/:run_id', auth.requireUser, async (req, res) => {
    const runId = String(req.params.run_id);
    const run = await getRun(store, runId);
    if (!run) throw new NotFound(`Run ${runId} not found`);
    const principal = res.locals.principal as Principal;
    if (!principal.isRuntimeAdmin && principal.subject !== run.was_started_by) {
      throw new Forbidden('Only the user who started a run, or a runtime administrator, may see it.');
    }
    res.json(run);
  });
  return router;
}
