/**
 * `PATCH /admin/site_clients/{site_client_id}` (a new secret, as in the original: for holders of
 * the `/admin/site_clients` allowance) and `DELETE /admin/site_clients/{site_client_id}` (revokes
 * the client: for those holders and the administrators of the client's site). Either ends every
 * token issued to the client before.
 */
import express, { type Response } from 'express';
import type { Services } from '../services.ts';
import { guardsOf } from '../http/guards.ts';
import { Forbidden, NotFound } from '../errors.ts';
import type { Principal } from './principal.ts';

export const UPDATE_SITE_CLIENTS_FORBIDDEN = 'You are not allowed to update site clients.';
export const REVOKE_SITE_CLIENT_FORBIDDEN =
  'Only administrators of the site a client belongs to, and holders of the /admin/site_clients allowance, may revoke it.';

const principalOf = (res: Response) => res.locals.principal as Principal;

export function siteClientsRouter(deps: Services): express.Router {
  const { accounts, allowances } = deps;
  const { requireUser } = guardsOf(deps.auth);
  const router = express.Router();

  router.patch('/admin/site_clients/:site_client_id', requireUser, async (req, res) => {
    if (!(await allowances.permits(principalOf(res), '/admin/site_clients'))) {
      throw new Forbidden(UPDATE_SITE_CLIENTS_FORBIDDEN);
    }
    const clientId = String(req.params.site_client_id);
    // The body's shape (`secret`, at least 8 characters, nothing else) is checked by the validator.
    const secret = (req.body as { secret?: unknown } | undefined)?.secret;
    if (typeof secret === 'string') {
      await accounts.setSiteClientSecret(clientId, secret);
      res.type('text/plain').send(`Site client '${clientId}' has been updated.`);
      return;
    }
    // As the original: without a secret there is nothing to change, once the client is known.
    if (!(await accounts.getSiteClient(clientId))) throw new NotFound(`No site client with id '${clientId}'`);
    res.status(204).end();
  });

  router.delete('/admin/site_clients/:site_client_id', requireUser, async (req, res) => {
    const principal = principalOf(res);
    const clientId = String(req.params.site_client_id);
    if (!(await allowances.permits(principal, '/admin/site_clients'))) {
      // Site administrators may revoke their own site's clients; anyone else learns nothing here.
      const client = await accounts.getSiteClient(clientId);
      const user = principal.kind === 'user' ? await accounts.getUser(principal.subject) : null;
      if (!client || !user || !user.site_admin.includes(client.site_id)) {
        throw new Forbidden(REVOKE_SITE_CLIENT_FORBIDDEN);
      }
    }
    await accounts.revokeSiteClient(clientId);
    res.status(204).end();
  });

  return router;
}
