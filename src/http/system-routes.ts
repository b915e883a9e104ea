import express from 'express';
import type { Services } from '../services.ts';
import { SCHEMA_VERSION, isCollectionName } from '../schema/nmdc.ts';
import { SERVICE_VERSION, API_VERSION } from '../version.ts';
import { answerJson } from './answer.ts';

/**
 * System administration: liveness and versions. `/health` answers the original's `web_server` and
 * `database` booleans (503 when the store does not answer) beside the engines in use.
 */
export function systemRouter(deps: Services): express.Router {
  const router = express.Router();
  router.get('/health', async (_req, res) => {
    const engines = { store: deps.store.engine, search_index: deps.searchIndex.engine };
    let collections: string[];
    try {
      // Metadata collections holding records (accounts live beside them in the same store).
      collections = await deps.store.nonEmptyCollections();
    } catch (err) {
      deps.logger.warn({ err }, 'health check: the store did not answer');
      // The original's booleans: the web server answers, the database does not.
      res.status(503).json({ status: 'unavailable', web_server: true, database: false, ...engines });
      return;
    }
    res.json({
      status: 'ok',
      web_server: true,
      database: true,
      ...engines,
      collections: collections.filter(isCollectionName).length,
    });
  });
  router.get('/version', (_req, res) => {
    answerJson(res, { 'nmdc-runtime': SERVICE_VERSION, 'nmdc-schema': SCHEMA_VERSION, api: API_VERSION });
  });
  return router;
}
