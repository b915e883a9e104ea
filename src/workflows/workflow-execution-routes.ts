/**
 * `POST /workflows/workflow_executions`: a site client posts the records its workflow run produced
 * as an NMDC `Database` (workflow executions with their data objects, and whatever else they
 * need). Validated as `POST /metadata/json:validate` does, references included, then upserted by
 * id all or nothing, with the search index and the provenance edges.
 *
 * `DELETE /workflows/workflow_executions/{id}`: the execution and what depends on it (see
 * workflow-execution-deletion.ts), for holders of the delete allowance, as in the original;
 * `dry_run=true` answers what would be deleted and deletes nothing.
 */
import express from 'express';
import type { Services } from '../services.ts';
import type { Principal } from '../accounts/principal.ts';
import { guardsOf } from '../http/guards.ts';
import { Forbidden, Unprocessable } from '../errors.ts';
import { WorkflowExecutionDeletion } from './workflow-execution-deletion.ts';
import { MetadataValidator } from '../validation/index.ts';
import { inBatches, recordsByCollection, validationRefusal } from '../submission/json-submission.ts';

/** What the original answers once the records are written. */
export const WORKFLOW_EXECUTIONS_ACCEPTED = { message: 'jobs accepted' } as const;

/** The allowance deleting needs: the original asks the one of `/queries:run` deletes. */
const DELETE_ACTION = '/queries:run(query_cmd:DeleteCommand)';
const DELETE_FORBIDDEN = 'Only specific users are allowed to issue update and delete commands.';

export function workflowExecutionsRouter(deps: Services): express.Router {
  const validator = new MetadataValidator(deps.store);
  const deletion = new WorkflowExecutionDeletion(deps.store, deps.writer);
  const { requireSiteClient, requireUser } = guardsOf(deps.auth);
  const router = express.Router();

  router.delete('/workflows/workflow_executions/:workflow_execution_id', requireUser, async (req, res) => {
    const principal = res.locals.principal as Principal;
    if (!(await deps.allowances.permits(principal, DELETE_ACTION))) throw new Forbidden(DELETE_FORBIDDEN);
    const id = req.params.workflow_execution_id as string;
    if (String(req.query.dry_run) === 'true') {
      res.json({
        message: 'Dry run: nothing was deleted; these records would be',
        dry_run: true,
        ...(await deletion.cascadeOf(id)),
      });
      return;
    }
    const deleted = await deletion.delete(id);
    req.log?.info(
      {
        workflow_execution_id: id,
        by: principal.subject,
        workflow_executions: deleted.deleted_workflow_execution_ids.length,
        data_objects: deleted.deleted_data_object_ids.length,
        functional_annotation_agg: deleted.deleted_functional_annotation_agg_oids.length,
        jobs: deleted.deleted_job_ids.length,
      },
      'workflow execution deleted with its dependents',
    );
    res.json({ message: 'Workflow execution and dependencies deleted successfully', ...deleted });
  });

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
