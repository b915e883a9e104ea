/**
 * `POST /metadata/json:submit`: a logged-in caller holding the allowance `/metadata/json:submit`
 * (or a runtime administrator) submits NMDC `Database` JSON; see src/submission/json-submission.ts.
 * A large body's records are staged while it is read, once its caller is known to be allowed to
 * submit (`submissionBodies`, src/submission/early-staging.ts).
 */
import express, { type Request } from 'express';
import type { Services } from '../services.ts';
import type { Principal } from '../accounts/principal.ts';
import { bearerTokenOf, guardsOf } from '../http/guards.ts';
import type { JsonReader } from '../http/request-reading/json-in-turns.ts';
import { Forbidden, Unprocessable } from '../errors.ts';
import { JsonSubmissions, type EarlyStaging } from './json-submission.ts';

export const SUBMIT_FORBIDDEN = 'Only specific users are allowed to submit json at this time.';

const SUBMIT_PATH = '/metadata/json:submit';
const SUBMIT_ALLOWANCE = '/metadata/json:submit';

/** The submissions of each record writer (the route and the body reader of an app share them). */
const submissionsByWriter = new WeakMap<Services['writer'], JsonSubmissions>();

export function submissionsOf(deps: Services): JsonSubmissions {
  let submissions = submissionsByWriter.get(deps.writer);
  if (!submissions) {
    submissions = new JsonSubmissions(deps.store, deps.writer, deps.storedObjects, deps.logger);
    submissionsByWriter.set(deps.writer, submissions);
  }
  return submissions;
}

/**
 * A submission request's staging, once `settled`: the caller's check begun at the body's first
 * bytes has ended (staged if allowed).
 */
const stagings = new WeakMap<Request, { settled: Promise<void>; staging?: EarlyStaging }>();

/**
 * For the JSON body reader (`jsonBodies`' `observe`): as a large body of `POST
 * /metadata/json:submit` begins, checks its caller as the route will (a valid token, the
 * allowance) and, if allowed, has its records staged as they are parsed (those parsed before the
 * check ended are told at once). The route takes them (`stagingOf`); a request answered otherwise
 * (refused on the way, or closed) releases them.
 */
export function submissionBodies(deps: Services): (req: Request, reader: JsonReader) => void {
  return (req, reader) => {
    if (req.method !== 'POST' || req.path !== SUBMIT_PATH) return;
    const entry: { settled: Promise<void>; staging?: EarlyStaging } = { settled: Promise.resolve() };
    stagings.set(req, entry);
    entry.settled = (async () => {
      const principal = await deps.auth.principalOf(bearerTokenOf(req.headers.authorization));
      if (!(await deps.allowances.permits(principal, SUBMIT_ALLOWANCE))) return;
      const res = req.res;
      // Answered, or the client gone (not `req.destroyed`: a request is destroyed once read to its end).
      if (!res || res.writableEnded || res.destroyed || req.socket.destroyed) return;
      const staged = submissionsOf(deps).stageWhileRead();
      if (!staged) return;
      entry.staging = staged.staging;
      res.once('close', () => staged.staging.release());
      reader.observe(staged.observer);
    })().catch(() => {
      // Not allowed, or the token is not valid: the route answers for it.
    });
  };
}

/**
 * The records staged for this request while its body was read, if any. The route has made the
 * same check as the one begun at the body's first bytes, so that one has ended or is about to: it
 * is waited for, so that a busy process (whose check outlasted the reading) still stages.
 */
async function stagingOf(req: Request): Promise<EarlyStaging | undefined> {
  const entry = stagings.get(req);
  if (!entry) return undefined;
  await entry.settled;
  return entry.staging;
}

export function submissionRouter(deps: Services): express.Router {
  const submissions = submissionsOf(deps);
  const { requireUser } = guardsOf(deps.auth);
  const router = express.Router();
  router.post('/metadata/json\\:submit', requireUser, async (req, res) => {
    const principal = res.locals.principal as Principal;
    if (!(await deps.allowances.permits(principal, SUBMIT_ALLOWANCE))) throw new Forbidden(SUBMIT_FORBIDDEN);
    const payload: unknown = req.body;
    if (payload === null || typeof payload !== 'object' || Array.isArray(payload)) {
      throw new Unprocessable(
        'The body must be an NMDC Database JSON object: {"<collection>": [records...]}',
      );
    }
    // A staging not taken here is released as the request closes (`submissionBodies`).
    const early = await stagingOf(req);
    const { run_id } = await submissions.submit(payload as Record<string, unknown>, principal, early);
    res.json({ type: 'success', detail: { run_id } });
  });
  return router;
}
