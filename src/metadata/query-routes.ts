import express from 'express';
import type { Services } from '../services.ts';
import type { Principal } from '../accounts/principal.ts';
import { guardsOf } from '../http/guards.ts';
import { CollectionsReader } from './collections-reader.ts';
import { QueryCommands } from './query-commands.ts';

/** `POST /queries:run` (bearer token required). */
export function queriesRouter(deps: Services): express.Router {
  const commands = new QueryCommands(
    new CollectionsReader(deps.planner),
    deps.store.state,
    deps.writer,
    deps.store.databaseName,
    deps.allowances,
  );
  const { requireUser } = guardsOf(deps.auth);
  const router = express.Router();
  router.post('/queries\\:run', requireUser, async (req, res) => {
    res.json(await commands.run(req.body, res.locals.principal as Principal));
  });
  return router;
}
