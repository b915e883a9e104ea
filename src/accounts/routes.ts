/**
 * `GET /users/me`, `POST /users/me:changePassword`, `POST /users`, `PUT /users`, `GET /sites`,
 * `POST /sites`, `GET/PATCH /sites/{site_id}`, `GET/PUT /sites/{site_id}/capabilities` and
 * `POST /sites/{site_id}:generateCredentials`. Bodies are already checked by the OpenAPI validator.
 */
import express, { type Response } from 'express';
import type { Services } from '../services.ts';
import { guardsOf } from '../http/guards.ts';
import { BadRequest, Forbidden, NotFound, Unprocessable } from '../errors.ts';
import type { Principal } from './principal.ts';
import type { Accounts } from './accounts.ts';
import { publicSite, publicUser, type SiteRecord, type UserRecord } from './records.ts';
import { parseJsonFilter } from '../query/guard/index.ts';
import { tokenPage } from '../metadata/token-pages.ts';
import { listingParams } from '../http/request-reading/listing-params.ts';

/** The signed-in user's current record; site clients have none (403). */
async function callingUser(accounts: Accounts, res: Response): Promise<UserRecord> {
  const principal = res.locals.principal as Principal;
  if (principal.kind !== 'user') throw new Forbidden('This operation needs a user login, not a site client');
  const user = await accounts.getUser(principal.subject);
  // The bearer guard already refused tokens of deleted or disabled users; this covers a race.
  if (!user || user.disabled) throw new Forbidden('User account is not active');
  return user;
}

function stringField(body: Record<string, unknown>, name: string, required: boolean): string | undefined {
  const value = body[name];
  if (value === undefined || value === null) {
    if (required) throw new BadRequest(`${name} is required`);
    return undefined;
  }
  if (typeof value !== 'string' || (required && value.length === 0))
    throw new BadRequest(`${name} must be a string`);
  return value;
}

function stringList(body: Record<string, unknown>, name: string): string[] {
  const value = body[name];
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value) || !value.every((v) => typeof v === 'string')) {
    throw new BadRequest(`${name} must be an array of strings`);
  }
  return value as string[];
}

export function accountsRouter(deps: Services): express.Router {
  const { accounts } = deps;
  const { state } = deps.store;
  const { requireUser } = guardsOf(deps.auth);
  const limits = deps.auth.limiter;
  const router = express.Router();

  router.get('/users/me', requireUser, async (_req, res) => {
    res.json(publicUser(await callingUser(accounts, res)));
  });

  // A user changes their own password, proving the current one: a stolen token alone cannot take
  // the account over, and guessing the current password here counts like guessing at `/token`.
  router.post('/users/me\\:changePassword', requireUser, async (req, res) => {
    const caller = await callingUser(accounts, res);
    const body = (req.body ?? {}) as Record<string, unknown>;
    const current = stringField(body, 'current_password', true)!;
    const next = stringField(body, 'new_password', true)!;
    const account = `user:${caller.username}`;
    const address = req.ip ?? 'unknown';
    await limits.admit(account, address);
    try {
      await accounts.changeOwnPassword(caller.username, current, next);
    } catch (err) {
      // Only a wrong current password (403) counts as a failed attempt; a refused new one does not.
      if (!(err instanceof Forbidden)) await limits.succeeded(account, address);
      throw err;
    }
    await limits.succeeded(account, address);
    res.status(204).end();
  });

  router.post('/users', requireUser, async (req, res) => {
    const caller = await callingUser(accounts, res);
    if (!accounts.isRuntimeAdmin(caller)) throw new Forbidden('Only runtime administrators may create users');
    const body = (req.body ?? {}) as Record<string, unknown>;
    // The password rules (length, common and guessable passwords) are checked by createUser: 422.
    const user = await accounts.createUser({
      username: stringField(body, 'username', true)!,
      password: stringField(body, 'password', true)!,
      site_admin: stringList(body, 'site_admin'),
      email: stringField(body, 'email', false),
      full_name: stringField(body, 'full_name', false),
    });
    res.status(201).json(publicUser(user));
  });

  // As the original: the body is the user as it should be (`UserIn`); members left out, and an
  // empty password, are left as they are.
  router.put('/users', requireUser, async (req, res) => {
    const caller = await callingUser(accounts, res);
    if (!accounts.isRuntimeAdmin(caller)) throw new Forbidden('Only runtime administrators may update users');
    const body = (req.body ?? {}) as Record<string, unknown>;
    const password = stringField(body, 'password', false);
    const disabled = body.disabled;
    if (disabled !== undefined && disabled !== null && typeof disabled !== 'boolean') {
      throw new BadRequest('disabled must be true or false');
    }
    const user = await accounts.updateUser(stringField(body, 'username', true)!, {
      password: password === '' ? undefined : password,
      email: stringField(body, 'email', false),
      full_name: stringField(body, 'full_name', false),
      site_admin:
        body.site_admin === undefined || body.site_admin === null
          ? undefined
          : stringList(body, 'site_admin'),
      disabled: typeof disabled === 'boolean' ? disabled : undefined,
    });
    res.json(publicUser(user));
  });

  router.get('/sites', requireUser, async (req, res) => {
    const principal = res.locals.principal as Principal;
    const visible = await accounts.sitesVisibleTo(principal);
    const page = await tokenPage(
      state,
      `sites of ${principal.kind} ${principal.subject}`,
      listingParams(req.query, (text) => {
        const asked = parseJsonFilter(text);
        return Object.keys(asked).length === 0 ? visible : { $and: [visible, asked] };
      }),
      (filter, page) => accounts.findSites(filter, page),
    );
    res.json({ ...page, resources: (page.resources as unknown as SiteRecord[]).map(publicSite) });
  });

  router.post('/sites', requireUser, async (req, res) => {
    const caller = await callingUser(accounts, res);
    const body = (req.body ?? {}) as Record<string, unknown>;
    const site = await accounts.createSite(
      stringField(body, 'id', true)!,
      stringList(body, 'capability_ids'),
      caller.username,
    );
    res.status(201).json(publicSite(site));
  });

  // Registered before `/sites/:site_id` so the `:generateCredentials` suffix is not read as part of the id.
  router.post('/sites/:site_id\\:generateCredentials', requireUser, async (req, res) => {
    const caller = await callingUser(accounts, res);
    res.json(await accounts.generateSiteCredentials(String(req.params.site_id), caller));
  });

  // Public, as in the original: a site's id and capabilities.
  router.get('/sites/:site_id', async (req, res) => {
    const site = await accounts.getSite(String(req.params.site_id));
    if (!site) throw new NotFound();
    res.json(publicSite(site));
  });

  // Only `capability_ids` may change (the schema refuses other fields); absent, nothing changes.
  router.patch('/sites/:site_id', requireUser, async (req, res) => {
    const caller = await callingUser(accounts, res);
    const siteId = String(req.params.site_id);
    const body = (req.body ?? {}) as Record<string, unknown>;
    const site =
      body.capability_ids === undefined
        ? await accounts.administeredSite(siteId, caller)
        : await accounts.setSiteCapabilities(siteId, stringList(body, 'capability_ids'), caller);
    res.json(publicSite(site));
  });

  // Public, like the site itself.
  router.get('/sites/:site_id/capabilities', async (req, res) => {
    const siteId = String(req.params.site_id);
    const site = await accounts.getSite(siteId);
    if (!site) throw new NotFound(`No site with id '${siteId}'`);
    res.json([...site.capability_ids]);
  });

  router.put('/sites/:site_id/capabilities', requireUser, async (req, res) => {
    const caller = await callingUser(accounts, res);
    const ids: unknown = req.body;
    if (!Array.isArray(ids) || !ids.every((id) => typeof id === 'string')) {
      throw new Unprocessable('The body must be a list of capability ids, e.g. ["metag-1.0.0"]');
    }
    const site = await accounts.setSiteCapabilities(String(req.params.site_id), ids as string[], caller);
    res.json([...site.capability_ids]);
  });

  return router;
}
