import express from 'express';
import type { AppDeps } from '../http/deps.ts';
import type { Auth, Principal } from '../auth/index.ts';
import type { QueryPlanner } from '../query/planner/planner.ts';
import { CollectionsReader } from './collections-reader.ts';
import { QueryCommands, type RecordWrites } from './query-commands.ts';

/** `POST /queries:run` (bearer token required). */
export function queriesRouter(
  deps: AppDeps,
  planner: QueryPlanner,
  auth: Auth,
  writes: RecordWrites,
): express.Router {
  const commands = new QueryCommands(
    new CollectionsReader(planner),
    deps.store.state,
    writes,
    deps.store.databaseName,
    auth.allowances,
  );
  const router = express.Router();
  router.post('/queries\\:run', auth.requireUser, async (req, res) => {
    res.json(await commands.run(req.body, res.locals.principal as Principal));
  });
  return router;
}
