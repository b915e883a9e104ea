/**
 * Accounts and authentication, mounted into the app: the built-in OpenID Connect provider, the
 * `/token` facade with its three login methods, external researcher sign-in, the bearer guard,
 * the users and sites endpoints, and allowances.
 */
import express, { type RequestHandler } from 'express';
import type { AppDeps } from '../http/deps.ts';
import type { QueryPlanner } from '../query/planner/planner.ts';
import {
  Allowances,
  accountsRouter,
  allowancesRouter,
  ensureAccounts,
  siteClientsRouter,
  type Accounts,
} from '../accounts/index.ts';
import { loadServiceKeys } from './keys.ts';
import { ExternalIdentity } from './external-identity.ts';
import { buildProvider } from './provider.ts';
import {
  AccessTokenVerifier,
  bearerGuard,
  bearerTokenOf,
  identifyCaller,
  requireSiteClient,
} from './bearer-guard.ts';
import { RevocationList } from './revocation-list.ts';
import { endSignInsOf } from './state-adapter.ts';
import { LoginRateLimiter } from './login-rate-limit.ts';
import { ProviderTokenIssuer, tokenEndpoint } from './token-endpoint.ts';
import { browserFlowsRouter } from './browser-flows.ts';
import { HttpError } from '../errors.ts';

export type { Principal } from '../accounts/principal.ts';

export interface Auth {
  /** Mounted before the body parsers and the validator: the OIDC provider and login pages. */
  preRouter: express.Router;
  /** `/token`, `/users`, `/sites` (and `/sites/{site_id}:generateCredentials`). */
  apiRouter: express.Router;
  /** Guard for private routes: sets `res.locals.principal` or answers 401. */
  requireUser: RequestHandler;
  /** Guard for operations only site clients may call: 401 without a valid token, 403 for a user. */
  requireSiteClient: RequestHandler;
  /** For public endpoints: sets `res.locals.principal` when a valid token is sent, never refuses. */
  identifyCaller: RequestHandler;
  /** Users, sites and site clients. */
  accounts: Accounts;
  /** Who may do what beyond reading: `await auth.allowances.permits(principal, action)`. */
  allowances: Allowances;
  close(): Promise<void>;
}

export async function createAuth(deps: AppDeps, _planner: QueryPlanner): Promise<Auth> {
  const { config, store, logger } = deps;
  // A changed password also ends the account's sign-in sessions at the provider.
  const accounts = await ensureAccounts(deps, async (change) => {
    if (change.kind === 'user') await endSignInsOf(store.state, change.id);
  });
  const keys = await loadServiceKeys(config.signingKeys, store.state);
  const external = config.externalOidc
    ? new ExternalIdentity(config.externalOidc, `${config.publicUrl}/login/external/callback`)
    : undefined;
  const { provider, apiResource, facadeClientSecret } = buildProvider({
    config,
    state: store.state,
    keys,
    accounts,
    external,
  });
  // Route the provider's own error reports to the service log instead of stderr.
  (provider as unknown as NodeJS.EventEmitter).on('error', (err: unknown) =>
    logger.error({ err }, 'oidc provider error'),
  );
  provider.on('server_error', (_ctx, err) => logger.error({ err }, 'oidc provider error'));

  const verifier = new AccessTokenVerifier(keys.verification, config.publicUrl, apiResource);
  const revocations = new RevocationList(store.state);
  const requireUser = bearerGuard(verifier, revocations, accounts);
  const limiter = new LoginRateLimiter(store.state);
  const issuer = new ProviderTokenIssuer(provider, facadeClientSecret);

  const preRouter = browserFlowsRouter({
    provider,
    publicUrl: config.publicUrl,
    accounts,
    state: store.state,
    external,
    issuer,
    verifier,
    revocations,
    limiter,
    tokenTtlSeconds: config.tokenTtlSeconds,
    logger,
  });

  const apiRouter = express.Router();
  apiRouter.post(
    '/token',
    tokenEndpoint({
      issuer,
      tokenTtlSeconds: config.tokenTtlSeconds,
      exchangeEnabled: Boolean(external),
      limiter,
    }),
  );
  // Server-side logout: the presented token stops working at once.
  apiRouter.post('/logout', async (req, res) => {
    const token = bearerTokenOf(req.headers.authorization);
    if (token) {
      try {
        const claims = await verifier.verify(token, { allowExpired: true });
        await revocations.revoke(claims.jti!, claims.exp!);
      } catch (err) {
        if (!(err instanceof HttpError)) throw err;
      }
    }
    res.status(204).end();
  });
  const allowances = new Allowances(store);
  apiRouter.use(accountsRouter(accounts, requireUser, store.state, limiter));
  apiRouter.use(allowancesRouter(allowances, requireUser));
  apiRouter.use(siteClientsRouter(accounts, allowances, requireUser));

  return {
    preRouter,
    apiRouter,
    requireUser,
    requireSiteClient: requireSiteClient(requireUser),
    identifyCaller: identifyCaller(requireUser),
    accounts,
    allowances,
    close: async () => {},
  };
}
