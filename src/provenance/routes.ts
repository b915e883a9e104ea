/**
 * The provenance graph (Metadata access): linked instances, a study's data objects, and a
 * workflow execution's related resources. The walks live in src/provenance/.
 */
import express, { type Request } from 'express';
import type { Services } from '../services.ts';
import { ProvenanceGraph } from './graph.ts';
import { queryInteger, queryText } from '../http/request-reading/values.ts';
import { answerLargeJson, writeChunk } from '../http/answer.ts';
import { isLargePage } from '../large-answers.ts';

/** Above this many data objects the answer is written as it is read, group by group. */
export const STREAM_DATA_OBJECTS_ABOVE = 2000;

const queryList = (value: unknown): string[] =>
  Array.isArray(value) ? value.map(String) : typeof value === 'string' ? [value] : [];

export function provenanceRouter(deps: Services): express.Router {
  const graph = new ProvenanceGraph(deps.edgeIndex, deps.store, deps.store.state);
  const router = express.Router();

  router.get('/nmdcschema/linked_instances', async (req: Request, res) => {
    const max_page_size = queryInteger(req.query.max_page_size, 20);
    const answer = async () =>
      answerLargeJson(
        res,
        await graph.linkedInstances({
          ids: queryList(req.query.ids),
          types: queryList(req.query.types),
          hydrate: String(req.query.hydrate) === 'true',
          max_page_size,
          page_token: queryText(req.query.page_token),
        }),
      );
    await (isLargePage(max_page_size) ? deps.largeAnswers.run(answer) : answer());
  });

  router.get('/data_objects/study/:study_id', async (req, res) => {
    const groups = graph.dataObjectsForStudy(req.params.study_id);
    // Small answers go through res.json (and response validation); large ones are streamed.
    const held: Array<{ biosample_id: string; data_objects: unknown[] }> = [];
    let count = 0;
    let next = await groups.next();
    for (; !next.done && count <= STREAM_DATA_OBJECTS_ABOVE; next = await groups.next()) {
      held.push(next.value);
      count += next.value.data_objects.length;
    }
    if (next.done) {
      res.json(held);
      return;
    }
    res.status(200).type('application/json');
    let first = true;
    const send = async (group: unknown) => {
      await writeChunk(res, (first ? '[' : ',') + JSON.stringify(group));
      first = false;
    };
    for (const group of held) await send(group);
    for (; !next.done; next = await groups.next()) {
      if (res.destroyed) return void (await groups.return(undefined));
      await send(next.value);
    }
    res.end(first ? '[]' : ']');
  });

  router.get(
    '/workflow_executions/:workflow_execution_id/related_resources',
    async (req, res) => void res.json(await graph.relatedResources(req.params.workflow_execution_id)),
  );
  return router;
}
