/**
 * `POST /workflows/workflow_executions`: a site client posts the records its workflow run produced
 * as an NMDC `Database` (workflow executions with their data objects, and whatever else they
 * need). Validated as `POST /metadata/json:validate` does, references included, then upserted by
 * id all or nothing, with the search index and the provenance edges.
 */
import express from 'express';
import type { Services } from '../services.ts';
import { guardsOf } from '../http/guards.ts';
import { Unprocessable } from '../errors.ts';
import { MetadataValidator } from '../validation/index.ts';
import { inBatches, recordsByCollection, validationRefusal } from '../submission/json-submission.ts';

/** What the original answers once the records are written. */
export const WORKFLOW_EXECUTIONS_ACCEPTED = { message: 'jobs accepted' } as const;

export function workflowExecutionsRouter(deps: Services): express.Router {
  const validator = new MetadataValidator(deps.store);
  const { requireSiteClient } = guardsOf(deps.auth);
  const router = express.Router();
  router.post('/workflows/workflow_executions', requireSiteClient, async (req, res) => {
    const payload: unknown = req.body;
    if (payload === null || typeof payload !== 'object' || Array.isArray(payload)) {
      throw new Unprocessable(
        'The body must be an NMDC Database JSON object: {"workflow_execution_set": [...], "data_object_set": [...]}',
      );
    }
    const database = payload as Record<string, unknown>;
    const outcome = await validator.validateDatabase(database);
    if (!outcome.valid) throw validationRefusal(outcome);
    const batches = recordsByCollection(database).flatMap(({ collection, docs }) =>
      inBatches(docs).map((batch) => ({ collection, docs: batch })),
    );
    if (batches.length > 0) await deps.writer.upsertAll(batches);
    res.json(WORKFLOW_EXECUTIONS_ACCEPTED);
  });
  return router;
}
