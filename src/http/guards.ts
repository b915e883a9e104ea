/**
 * The guards every capability's routes put in front of their handlers: they ask the auth
 * capability who is calling (from the bearer token) and set `res.locals.principal`.
 */
import type { Request, RequestHandler } from 'express';
import { Forbidden, Unauthorized } from '../errors.ts';
import type { Principal } from '../accounts/principal.ts';

export interface Guards {
  /** Private routes: sets `res.locals.principal` or answers 401. */
  requireUser: RequestHandler;
  /** Operations only site clients may call: 401 without a valid token, 403 for a user. */
  requireSiteClient: RequestHandler;
  /**
   * Public endpoints that answer a logged-in caller differently (a site client's default job
   * filter): sets `res.locals.principal` when the request carries a valid token, and otherwise
   * goes on as an anonymous request. Real clients send their token everywhere, even a stale one,
   * and a public endpoint must not refuse them for it.
   */
  identifyCaller: RequestHandler;
}

export interface CallerAuthentication {
  /** The caller sending this bearer token; throws Unauthorized when there is none or it is not valid. */
  principalOf(token: string | undefined): Promise<Principal>;
}

export const SITE_CLIENTS_ONLY =
  'This operation is for site clients: log in with your site client credentials (grant_type=client_credentials).';

/** The token of an `Authorization: Bearer <token>` header. */
export function bearerTokenOf(header: string | undefined): string | undefined {
  if (!header) return undefined;
  const match = /^Bearer[ ]+([^ ]+)[ ]*$/i.exec(header);
  return match?.[1];
}

export function guardsOf(authentication: CallerAuthentication): Guards {
  const principalOf = (req: Request) => authentication.principalOf(bearerTokenOf(req.headers.authorization));
  return {
    requireUser: async (req, res, next) => {
      res.locals.principal = await principalOf(req);
      next();
    },
    requireSiteClient: async (req, res, next) => {
      const principal = await principalOf(req);
      res.locals.principal = principal;
      if (principal.kind !== 'site_client') throw new Forbidden(SITE_CLIENTS_ONLY);
      next();
    },
    identifyCaller: async (req, res, next) => {
      if (bearerTokenOf(req.headers.authorization)) {
        try {
          res.locals.principal = await principalOf(req);
        } catch (err) {
          if (!(err instanceof Unauthorized)) throw err;
          delete res.locals.principal;
        }
      }
      next();
    },
  };
}
