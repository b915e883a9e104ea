/**
 * Authentication: the built-in OpenID Connect provider, the `/token` logins with their three
 * methods and rate limit, external researcher sign-in, and who sends a bearer token. The routes
 * are in routes.ts (`/token`, `/logout`) and browser-routes.ts (the provider and login pages).
 */
import type { Logger } from 'pino';
import type Provider from 'oidc-provider';
import type { Config } from '../config.ts';
import type { DocumentStore } from '../store/port.ts';
import type { Accounts, Principal } from '../accounts/index.ts';
import { loadServiceKeys } from './keys.ts';
import { ExternalIdentity } from './external-identity.ts';
import { buildProvider } from './provider.ts';
import { AccessTokenVerifier, TokenAuthenticator } from './access-tokens.ts';
import { RevocationList } from './revocation-list.ts';
import { LoginRateLimiter } from './login-rate-limit.ts';
import { ProviderTokenIssuer, TokenLogins } from './token-endpoint.ts';

export type { Principal } from '../accounts/principal.ts';

export interface Auth {
  /** The OIDC provider (mounted by browser-routes.ts). */
  provider: Provider;
  /** Issues the provider's tokens in-process for the `/token` facade and external sign-in. */
  issuer: ProviderTokenIssuer;
  /** `POST /token`. */
  logins: TokenLogins;
  /** Login attempts per account and address, shared by `/token` and the login page. */
  limiter: LoginRateLimiter;
  /** The external researcher identity provider, when configured. */
  external: ExternalIdentity | undefined;
  /** Who sends a bearer token; ends tokens on logout and revocation. */
  tokens: TokenAuthenticator;
  /** The caller sending this bearer token (Unauthorized otherwise). */
  principalOf(token: string | undefined): Promise<Principal>;
  close(): Promise<void>;
}

export async function createAuth(
  deps: { config: Config; store: DocumentStore; logger: Logger },
  accounts: Accounts,
): Promise<Auth> {
  const { config, store, logger } = deps;
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
  const tokens = new TokenAuthenticator(verifier, new RevocationList(store.state), accounts);
  const limiter = new LoginRateLimiter(store.state);
  const issuer = new ProviderTokenIssuer(provider, facadeClientSecret);
  const logins = new TokenLogins(issuer, limiter, {
    tokenTtlSeconds: config.tokenTtlSeconds,
    exchangeEnabled: Boolean(external),
  });

  return {
    provider,
    issuer,
    logins,
    limiter,
    external,
    tokens,
    principalOf: (token) => tokens.principalOf(token),
    close: async () => {},
  };
}
