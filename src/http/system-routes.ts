import express from 'express';
import type { Services } from '../services.ts';
import { SCHEMA_VERSION, isCollectionName } from '../schema/nmdc.ts';
import { SERVICE_VERSION, API_VERSION } from '../version.ts';

/** System administration: liveness and versions. */
export function systemRouter(deps: Services): express.Router {
  const router = express.Router();
  router.get('/health', async (_req, res) => {
    // Metadata collections holding records (accounts live beside them in the same store).
    const collections = await deps.store.nonEmptyCollections();
    res.json({
      status: 'ok',
      store: deps.store.engine,
      search_index: deps.searchIndex.engine,
      collections: collections.filter(isCollectionName).length,
    });
  });
  router.get('/version', (_req, res) => {
    res.json({ 'nmdc-runtime': SERVICE_VERSION, 'nmdc-schema': SCHEMA_VERSION, api: API_VERSION });
  });
  return router;
}
