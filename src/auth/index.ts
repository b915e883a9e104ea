/**
 * Accounts and authentication, mounted into the app. Placeholder until the accounts issue lands:
 * every private operation answers 501 and private routes reject callers with 401.
 */
import express, { type RequestHandler } from 'express';
import type { AppDeps } from '../http/deps.ts';
import { NotImplemented, Unauthorized } from '../http/errors.ts';
import type { QueryPlanner } from '../../search/planner.ts';

/** Who is calling a private endpoint, set on `res.locals.principal` by `requireUser`. */
export interface Principal {
  kind: 'user' | 'site_client';
  /** The user's username, or for a site client its client_id. */
  subject: string;
  /** Site of a site client. */
  siteId?: string;
  /** Administrators of the site `svc-runtime-useradmin` (may run aggregate/update/delete, create users). */
  isRuntimeAdmin: boolean;
}

export interface Auth {
  /** Mounted before the body parsers and the validator: the OIDC provider and login pages. */
  preRouter: express.Router;
  /** `/token`, `/users`, `/sites` (and `/sites/{site_id}:generateCredentials`). */
  apiRouter: express.Router;
  /** Guard for private routes: sets `res.locals.principal` or answers 401. */
  requireUser: RequestHandler;
  close(): Promise<void>;
}

export async function createAuth(_deps: AppDeps, _planner: QueryPlanner): Promise<Auth> {
  const notImplemented: RequestHandler = () => {
    throw new NotImplemented();
  };
  const apiRouter = express.Router();
  apiRouter.post('/token', notImplemented);
  apiRouter.get('/users/me', notImplemented);
  apiRouter.post('/users', notImplemented);
  apiRouter.post('/sites', notImplemented);
  apiRouter.post('/sites/:site_id\\:generateCredentials', notImplemented);
  apiRouter.get('/sites/:site_id', notImplemented);
  return {
    preRouter: express.Router(),
    apiRouter,
    requireUser: () => {
      throw new Unauthorized();
    },
    close: async () => {},
  };
}
