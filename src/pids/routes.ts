/**
 * `/pids`: mint, resolve, bind and delete persistent identifiers. Site clients only, as in the
 * original (its `get_current_client_site`): a user's token is refused with 403, no token 401.
 * Bodies are already checked against openapi.yaml by the validator.
 */
import express, { type Response } from 'express';
import type { Services } from '../services.ts';
import type { Principal } from '../accounts/principal.ts';
import { guardsOf } from '../http/guards.ts';
import { Forbidden, NotFound } from '../errors.ts';
import { DEFAULT_SCHEMA_CLASS, Minter, type Requester } from './index.ts';

export const SITE_CLIENTS_ONLY =
  'Persistent identifiers are minted and managed by site clients only: log in with your site ' +
  "client's credentials (grant_type=client_credentials), not as a user";

function requesterOf(res: Response): Requester {
  const principal = res.locals.principal as Principal;
  if (principal.kind !== 'site_client' || !principal.siteId) throw new Forbidden(SITE_CLIENTS_ONLY);
  return { siteId: principal.siteId, clientId: principal.subject };
}

type Body = Record<string, any>;

export function pidsRouter(deps: Services): express.Router {
  const minter = new Minter(deps.store);
  const { requireUser } = guardsOf(deps.auth);
  const router = express.Router();

  router.post('/pids/mint', requireUser, async (req, res) => {
    const requester = requesterOf(res);
    const body = (req.body ?? {}) as Body;
    const schemaClass: string = body.schema_class?.id ?? DEFAULT_SCHEMA_CLASS;
    res.json(await minter.mint(requester, schemaClass, body.how_many ?? 1));
  });

  router.get('/pids/resolve/:id_name', requireUser, async (req, res) => {
    requesterOf(res);
    const idName = String(req.params.id_name);
    const identifier = await minter.resolve(idName);
    if (!identifier) throw new NotFound(`ID ${idName} is unknown`);
    res.json(identifier);
  });

  router.post('/pids/bind', requireUser, async (req, res) => {
    const requester = requesterOf(res);
    const body = req.body as Body;
    res.json(await minter.bind(requester, body.id_name, body.metadata_record));
  });

  router.post('/pids/delete', requireUser, async (req, res) => {
    const requester = requesterOf(res);
    await minter.delete(requester, (req.body as Body).id_name);
    // The original answers 200 with a JSON null. Sent as text: the response validator takes a
    // null from res.json for a missing body.
    res.type('application/json').send('null');
  });

  return router;
}
