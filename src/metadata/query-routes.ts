import express from 'express';
import type { Services } from '../services.ts';
import type { Principal } from '../accounts/principal.ts';
import { guardsOf } from '../http/guards.ts';
import { answerLargeJson } from '../http/answer.ts';
import { LARGE_ANSWER_RECORDS } from '../large-answers.ts';
import { IncomingReferences } from '../validation/incoming-references.ts';
import { CollectionsReader } from './collections-reader.ts';
import { QueryCommands } from './query-commands.ts';
import { WriteCommands } from './write-commands.ts';
import { PipelineProcesses } from './pipeline-processes.ts';

/** Aggregation pipelines run at once (each in a process of its own); more wait for one to end. */
const PIPELINE_PROCESSES = 2;
/** Records read from the store per step of a whole collection's read for a pipeline. */
const STORED_TEXTS_BATCH = 1000;

/** `POST /queries:run` (bearer token required). */
export function queriesRouter(deps: Services): express.Router {
  const reader = new CollectionsReader(deps.planner);
  const commands = new QueryCommands(
    reader,
    deps.store.state,
    new WriteCommands(
      reader,
      deps.store,
      deps.writer,
      new IncomingReferences(deps.store, deps.edgeIndex),
      deps.logger,
    ),
    deps.store.databaseName,
    deps.allowances,
    new PipelineProcesses({
      memoryMb: deps.config.aggregateMemoryMb,
      timeMs: deps.config.aggregateTimeLimitSeconds * 1000,
      processes: PIPELINE_PROCESSES,
    }),
    deps.store.scanTexts && ((collection) => deps.store.scanTexts!(collection, STORED_TEXTS_BATCH)),
  );
  const { requireUser } = guardsOf(deps.auth);
  const router = express.Router();
  router.post('/queries\\:run', requireUser, async (req, res) => {
    // `allow_broken_refs=true`: update and delete may leave references dangling (2.13.0).
    const allowBrokenRefs = String(req.query.allow_broken_refs) === 'true';
    const principal = res.locals.principal as Principal;
    const answer = async () =>
      answerLargeJson(res, await commands.run(req.body, principal, { allowBrokenRefs }));
    const large = (await commands.batchAsked(req.body, principal)) > LARGE_ANSWER_RECORDS;
    await (large ? deps.largeAnswers.run(answer) : answer());
  });
  return router;
}
