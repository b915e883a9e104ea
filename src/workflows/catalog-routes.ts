/**
 * The workflow catalog's public reads: `/capabilities`, `/workflows`, `/object_types`, `/triggers`
 * and their sub-resources. Plain JSON arrays, as the original answers them (`List[...]`), in id order.
 */
import express from 'express';
import type { DocumentStore } from '../store/port.ts';
import type { Services } from '../services.ts';
import { NotFound } from '../errors.ts';
import {
  CAPABILITIES,
  OBJECT_TYPES,
  TRIGGERS,
  WORKFLOWS,
  getCapability,
  getObjectType,
  getTrigger,
  getWorkflow,
  triggersForObjectType,
  triggersForWorkflow,
} from './catalog.ts';

type CatalogStore = Pick<DocumentStore, 'find' | 'getById'>;

function found<T>(record: T | null, what: string, id: string): T {
  if (!record) throw new NotFound(`No ${what} with id '${id}'`);
  return record;
}

/** The records of `collection` with these ids, in id order (none for an empty list). */
function withIds(store: CatalogStore, collection: string, ids: string[]) {
  return ids.length === 0 ? Promise.resolve([]) : store.find(collection, { id: { $in: ids } });
}

export function workflowCatalogRouter(deps: Services): express.Router {
  const store: CatalogStore = deps.store;
  const router = express.Router();
  const param = (req: express.Request, name: string) => String(req.params[name]);

  router.get('/capabilities', async (_req, res) => {
    res.json(await store.find(CAPABILITIES, {}));
  });
  router.get('/capabilities/:capability_id', async (req, res) => {
    const id = param(req, 'capability_id');
    res.json(found(await getCapability(store, id), 'capability', id));
  });

  router.get('/workflows', async (_req, res) => {
    res.json(await store.find(WORKFLOWS, {}));
  });
  router.get('/workflows/:workflow_id', async (req, res) => {
    const id = param(req, 'workflow_id');
    res.json(found(await getWorkflow(store, id), 'workflow', id));
  });
  router.get('/workflows/:workflow_id/object_types', async (req, res) => {
    const id = param(req, 'workflow_id');
    found(await getWorkflow(store, id), 'workflow', id);
    const triggers = await triggersForWorkflow(store, id);
    res.json(await withIds(store, OBJECT_TYPES, [...new Set(triggers.map((t) => t.object_type_id))]));
  });
  router.get('/workflows/:workflow_id/capabilities', async (req, res) => {
    const id = param(req, 'workflow_id');
    const workflow = found(await getWorkflow(store, id), 'workflow', id);
    res.json(await withIds(store, CAPABILITIES, workflow.capability_ids ?? []));
  });

  router.get('/object_types', async (_req, res) => {
    res.json(await store.find(OBJECT_TYPES, {}));
  });
  router.get('/object_types/:object_type_id', async (req, res) => {
    const id = param(req, 'object_type_id');
    res.json(found(await getObjectType(store, id), 'object type', id));
  });
  router.get('/object_types/:object_type_id/workflows', async (req, res) => {
    const id = param(req, 'object_type_id');
    found(await getObjectType(store, id), 'object type', id);
    const triggers = await triggersForObjectType(store, id);
    res.json(await withIds(store, WORKFLOWS, [...new Set(triggers.map((t) => t.workflow_id))]));
  });

  router.get('/triggers', async (_req, res) => {
    res.json(await store.find(TRIGGERS, {}));
  });
  router.get('/triggers/:trigger_id', async (req, res) => {
    const id = param(req, 'trigger_id');
    res.json(found(await getTrigger(store, id), 'trigger', id));
  });

  return router;
}
