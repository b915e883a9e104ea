import express from 'express';
import type { AppDeps } from '../deps.ts';
import type { Auth, Principal } from '../../auth/index.ts';
import type { QueryPlanner } from '../../query/planner/planner.ts';
import { CollectionsReader } from '../../metadata/collections-reader.ts';
import { QueryCommands } from '../../metadata/query-commands.ts';
import { WriteCommands, type RecordWrites } from '../../metadata/write-commands.ts';
import { IncomingReferences } from '../../validation/incoming-references.ts';

/** `POST /queries:run` (bearer token required). */
export function queriesRouter(
  deps: AppDeps,
  planner: QueryPlanner,
  auth: Auth,
  writes: RecordWrites,
): express.Router {
  const reader = new CollectionsReader(planner);
  const commands = new QueryCommands(
    reader,
    deps.store.state,
    new WriteCommands(
      reader,
      deps.store,
      writes,
      new IncomingReferences(deps.store, deps.edgeIndex),
      deps.logger,
    ),
    deps.store.databaseName,
    auth.allowances,
  );
  const router = express.Router();
  router.post('/queries\\:run', auth.requireUser, async (req, res) => {
    // `allow_broken_refs=true`: update and delete may leave references dangling (2.13.0).
    const allowBrokenRefs = String(req.query.allow_broken_refs) === 'true';
    res.json(await commands.run(req.body, res.locals.principal as Principal, { allowBrokenRefs }));
  });
  return router;
}
