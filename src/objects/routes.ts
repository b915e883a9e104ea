/**
 * The objects endpoints (GA4GH DRS 1.x; see drs.ts): `POST/GET /objects`, `GET/PATCH
 * /objects/{object_id}`, `GET/PUT /objects/{object_id}/types`, `GET
 * /objects/{object_id}/access/{access_id}`, `GET /objects/{object_id}/content` (the bytes of the
 * service's own objects) and `GET /ga4gh/drs/v1/objects/{object_id}`. Bodies are already checked
 * by the OpenAPI validator.
 */
import express from 'express';
import type { Services } from '../services.ts';
import type { Principal } from '../accounts/principal.ts';
import { guardsOf } from '../http/guards.ts';
import { NotFound } from '../errors.ts';
import { parseJsonFilter } from '../query/guard/index.ts';
import { tokenPage } from '../metadata/token-pages.ts';
import { listingParams } from '../http/request-reading/listing-params.ts';
import { DrsObjects } from './drs.ts';

export function drsRouter(deps: Services): express.Router {
  const objects = new DrsObjects(deps.store, deps.storedObjects, deps.config.publicUrl);
  const auth = guardsOf(deps.auth);
  const dispatcher = deps.triggers;
  const router = express.Router();

  router.post('/objects', auth.requireSiteClient, async (req, res) => {
    const principal = res.locals.principal as Principal;
    res.status(201).json(await objects.create(req.body as Record<string, unknown>, principal.siteId!));
  });

  router.get('/objects', async (req, res) => {
    res.json(
      await tokenPage(
        deps.store.state,
        'objects',
        listingParams(req.query, parseJsonFilter),
        (filter, page) => objects.find(filter, page),
      ),
    );
  });

  router.get('/objects/:object_id/types', async (req, res) => {
    res.json(await objects.typesOf(String(req.params.object_id)));
  });

  router.put('/objects/:object_id/types', auth.requireUser, async (req, res) => {
    const principal = res.locals.principal as Principal;
    const { object, firingIds } = await objects.replaceTypes(
      String(req.params.object_id),
      req.body as string[],
      principal,
    );
    if (firingIds.length > 0) {
      // The jobs are made before answering; firings a failure leaves pending are retried by the
      // dispatcher's next drain, so the answer stands either way.
      await dispatcher.dispatch(firingIds).catch((err: unknown) => {
        req.log.error({ err }, 'trigger dispatch failed; left for the next drain');
        dispatcher.kick();
      });
    }
    res.json(object);
  });

  router.get('/objects/:object_id/access/:access_id', async (req, res) => {
    res.json(await objects.accessUrl(String(req.params.object_id), String(req.params.access_id)));
  });

  router.get('/objects/:object_id/content', async (req, res) => {
    const { record, bytes } = await objects.content(String(req.params.object_id));
    const name = typeof record.name === 'string' ? record.name : record.id;
    res
      .status(200)
      .set({
        'Content-Type': typeof record.mime_type === 'string' ? record.mime_type : 'application/octet-stream',
        'Content-Length': String(bytes.length),
        'Content-Disposition': `inline; filename="${name.replace(/[^\x20-\x7e]|["\\]/g, '_')}"`,
      })
      .end(bytes);
  });

  router.get('/objects/:object_id', async (req, res) => {
    const id = String(req.params.object_id);
    const object = await objects.get(id);
    if (object) {
      res.json(object);
      return;
    }
    const elsewhere = await objects.redirectFor(id);
    if (elsewhere) {
      res.redirect(307, elsewhere);
      return;
    }
    throw new NotFound(`Object ${id} not found`);
  });

  router.patch('/objects/:object_id', auth.requireSiteClient, async (req, res) => {
    const principal = res.locals.principal as Principal;
    res.json(
      await objects.patch(String(req.params.object_id), req.body as Record<string, unknown>, principal),
    );
  });

  // The GA4GH DRS path answers errors in the DRS shape (`msg`, `status_code`), not `detail`.
  router.get('/ga4gh/drs/v1/objects/:object_id', async (req, res) => {
    const id = String(req.params.object_id);
    const object = await objects.get(id);
    if (object) {
      res.json(object);
      return;
    }
    res.status(404).json({ msg: `Object ${id} not found`, status_code: 404 });
  });

  return router;
}
