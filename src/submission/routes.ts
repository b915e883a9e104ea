/**
 * `POST /metadata/json:submit`: a logged-in caller holding the allowance `/metadata/json:submit`
 * (or a runtime administrator) submits NMDC `Database` JSON; see src/submission/json-submission.ts.
 */
import express from 'express';
import type { Services } from '../services.ts';
import type { Principal } from '../accounts/principal.ts';
import { guardsOf } from '../http/guards.ts';
import { Forbidden, Unprocessable } from '../errors.ts';
import { JsonSubmissions } from './json-submission.ts';

export const SUBMIT_FORBIDDEN = 'Only specific users are allowed to submit json at this time.';

export function submissionRouter(deps: Services): express.Router {
  const submissions = new JsonSubmissions(deps.store, deps.writer, deps.storedObjects, deps.logger);
  const { requireUser } = guardsOf(deps.auth);
  const router = express.Router();
  router.post('/metadata/json\\:submit', requireUser, async (req, res) => {
    const principal = res.locals.principal as Principal;
    if (!(await deps.allowances.permits(principal, '/metadata/json:submit'))) {
      throw new Forbidden(SUBMIT_FORBIDDEN);
    }
    const payload: unknown = req.body;
    if (payload === null || typeof payload !== 'object' || Array.isArray(payload)) {
      throw new Unprocessable(
        'The body must be an NMDC Database JSON object: {"<collection>": [records...]}',
      );
    }
    const { run_id } = await submissions.submit(payload as Record<string, unknown>, principal);
    res.json({ type: 'success', detail: { run_id } });
  });
  return router;
}
