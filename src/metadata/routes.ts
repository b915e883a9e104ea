/**
 * Metadata access: the compact find endpoints (planned processes included, and their 1.2.0 name
 * `/activities`) and the `/nmdcschema` endpoints. Handlers are one line each; the rules live in src/metadata/.
 */
import express, { type Request, type Response } from 'express';
import type { Services } from '../services.ts';
import { NotFound } from '../errors.ts';
import { CollectionsReader, type FoundRecord } from './collections-reader.ts';
import { CompactFind, type CompactFindParams } from './compact-find.ts';
import { SchemaEndpoints, type ListParams } from './schema-endpoints.ts';
import {
  COLLECTION_NAMES,
  PLANNED_PROCESS_COLLECTIONS,
  SCHEMA_VERSION,
  TYPECODES,
  isCollectionName,
} from '../schema/nmdc.ts';
import { queryInteger, queryText } from '../http/request-reading/values.ts';
import { answerJson, answerJsonText, answerLargeJson } from '../http/answer.ts';
import { isLargePage } from '../large-answers.ts';
import { Exporter } from './export.ts';
import { exportCollection } from './export-routes.ts';

function compactParams(req: Request): CompactFindParams {
  return {
    filter: queryText(req.query.filter),
    sort: queryText(req.query.sort),
    fields: queryText(req.query.fields),
    page: req.query.page !== undefined ? queryInteger(req.query.page, 1) : undefined,
    per_page: queryInteger(req.query.per_page, 25),
    cursor: queryText(req.query.cursor),
    search: queryText(req.query.search),
    group_by: queryText(req.query.group_by),
  };
}

/** A record found by id: its JSON text as it is, or the record. */
function answerRecord(res: Response, found: FoundRecord): void {
  if ('text' in found) answerJsonText(res, found.text);
  else answerJson(res, found.doc);
}

function listParams(req: Request): ListParams {
  return {
    filter: queryText(req.query.filter),
    projection: queryText(req.query.projection),
    max_page_size: queryInteger(req.query.max_page_size, 20),
    page_token: queryText(req.query.page_token),
  };
}

export function metadataRouter(deps: Services): express.Router {
  const reader = new CollectionsReader(deps.planner);
  const finds = new CompactFind(reader, deps.store.state);
  const schema = new SchemaEndpoints(reader, deps.store.state);
  const router = express.Router();

  const findRoutes: Array<[path: string, collections: string[], idParam: string]> = [
    ['/studies', ['study_set'], 'study_id'],
    ['/biosamples', ['biosample_set'], 'sample_id'],
    ['/data_objects', ['data_object_set'], 'data_object_id'],
    ['/planned_processes', PLANNED_PROCESS_COLLECTIONS, 'planned_process_id'],
    // 1.2.0 name of the planned processes.
    ['/activities', PLANNED_PROCESS_COLLECTIONS, 'activity_id'],
  ];
  for (const [path, collections, idParam] of findRoutes) {
    router.get(path, async (req, res) =>
      answerLargeJson(res, await finds.find(collections, compactParams(req))),
    );
    router.get(`${path}/:${idParam}`, async (req, res) => {
      const found = await reader.getRecordById(collections, String(req.params[idParam]));
      if (!found) throw new NotFound();
      answerRecord(res, found);
    });
  }

  const exporter = new Exporter(reader, deps.store);
  router.get('/export/:collection_name', (req, res) => exportCollection(exporter, req, res));

  router.get('/nmdcschema/version', (_req, res) => void res.json(SCHEMA_VERSION));
  router.get(
    '/nmdcschema/typecodes',
    (_req, res) =>
      void res.json(
        TYPECODES.map((t) => ({
          id: `${t.schemaClass}_typecode`,
          schema_class: t.schemaClass,
          name: t.name,
        })),
      ),
  );
  router.get('/nmdcschema/collection_names', (_req, res) => void res.json([...COLLECTION_NAMES]));
  router.get('/nmdcschema/collection_stats', async (_req, res) => {
    const stats = await deps.store.collectionStats();
    res.json(
      stats
        .filter((s) => isCollectionName(s.collection) && s.count > 0)
        .map((s) => ({
          ns: `${deps.store.databaseName}.${s.collection}`,
          storageStats: {
            count: s.count,
            size: s.size,
            avgObjSize: s.avgObjSize,
            storageSize: s.storageSize,
            totalIndexSize: s.totalIndexSize,
            totalSize: s.totalSize,
            scaleFactor: 1,
          },
        })),
    );
  });
  router.get(
    '/nmdcschema/ids/:doc_id/collection-name',
    async (req, res) => void res.json(await schema.collectionNameOf(req.params.doc_id)),
  );
  router.get('/nmdcschema/ids/:doc_id', async (req, res) =>
    answerRecord(res, await schema.locate(req.params.doc_id)),
  );
  router.get('/nmdcschema/:collection_name/:doc_id', async (req, res) =>
    answerRecord(
      res,
      await schema.getOne(req.params.collection_name, req.params.doc_id, queryText(req.query.projection)),
    ),
  );
  router.get('/nmdcschema/:collection_name', async (req, res) => {
    const params = listParams(req);
    const answer = async () => answerLargeJson(res, await schema.list(req.params.collection_name, params));
    await (isLargePage(params.max_page_size) ? deps.largeAnswers.run(answer) : answer());
  });
  return router;
}
