/**
 * The built-in OpenID Connect provider. Its routes live under `/oidc/...`, discovery at
 * `/.well-known/openid-configuration`, the issuer is the service's public URL. Every access
 * token is a JWT for the API resource, signed with the service's keys.
 */
import { randomBytes } from 'node:crypto';
import Provider, { errors, type Configuration, type KoaContextWithOIDC } from 'oidc-provider';
import type { Config } from '../config.ts';
import type { StateStore } from '../store/port.ts';
import { credentialsVersion, type Accounts } from '../accounts/index.ts';
import type { ServiceKeys } from './keys.ts';
import { stateStoreAdapter } from './state-adapter.ts';
import { API_SCOPE, CREDENTIALS_VERSION_CLAIM, PRINCIPAL_KIND_CLAIM, apiResourceOf } from './resource.ts';
import { principalClaims } from './grants/issue-access-token.ts';
import { PASSWORD_GRANT, PASSWORD_GRANT_PARAMS, passwordGrant } from './grants/password.ts';
import { SITE_CLIENT_GRANT, SITE_CLIENT_GRANT_PARAMS, siteClientGrant } from './grants/site-client.ts';
import {
  TOKEN_EXCHANGE_GRANT,
  TOKEN_EXCHANGE_GRANT_PARAMS,
  externalIdTokenGrant,
} from './grants/external-id-token.ts';
import type { ExternalIdentity } from './external-identity.ts';

/** The docs page's public client (authorization code + PKCE). */
export const DOCS_CLIENT_ID = 'swagger-ui';
/** Confidential client only the in-process `/token` facade knows the secret of. */
export const FACADE_CLIENT_ID = 'nmdc-token-endpoint';

export const OIDC_PREFIX = '/oidc';

const SUPPORTED_SCOPES = ['openid', 'email', 'profile', API_SCOPE];

export interface BuiltProvider {
  provider: Provider;
  apiResource: string;
  facadeClientSecret: string;
}

export function buildProvider(options: {
  config: Config;
  state: StateStore;
  keys: ServiceKeys;
  accounts: Accounts;
  external: ExternalIdentity | undefined;
}): BuiltProvider {
  const { config, state, keys, accounts, external } = options;
  const apiResource = apiResourceOf(config.publicUrl);
  // Per process: the facade runs in-process, so no other party ever needs this secret.
  const facadeClientSecret = randomBytes(32).toString('base64url');
  const ttl = config.tokenTtlSeconds;
  const facadeGrants = [PASSWORD_GRANT, SITE_CLIENT_GRANT, ...(external ? [TOKEN_EXCHANGE_GRANT] : [])];

  const resourceServerInfo = {
    audience: apiResource,
    scope: API_SCOPE,
    accessTokenFormat: 'jwt' as const,
    accessTokenTTL: ttl,
  };

  const configuration: Configuration = {
    adapter: stateStoreAdapter(state),
    jwks: keys.signing as Configuration['jwks'],
    cookies: { keys: keys.cookieKeys },
    clients: [
      {
        client_id: DOCS_CLIENT_ID,
        token_endpoint_auth_method: 'none',
        redirect_uris: [`${config.publicUrl}/docs/oauth2-redirect.html`],
        grant_types: ['authorization_code'],
        response_types: ['code'],
      },
      {
        client_id: FACADE_CLIENT_ID,
        client_secret: facadeClientSecret,
        token_endpoint_auth_method: 'client_secret_basic',
        redirect_uris: [],
        grant_types: facadeGrants,
        response_types: [],
      },
    ],
    routes: {
      authorization: `${OIDC_PREFIX}/auth`,
      backchannel_authentication: `${OIDC_PREFIX}/backchannel`,
      code_verification: `${OIDC_PREFIX}/device`,
      device_authorization: `${OIDC_PREFIX}/device/auth`,
      end_session: `${OIDC_PREFIX}/session/end`,
      introspection: `${OIDC_PREFIX}/token/introspection`,
      jwks: `${OIDC_PREFIX}/jwks`,
      pushed_authorization_request: `${OIDC_PREFIX}/request`,
      registration: `${OIDC_PREFIX}/reg`,
      revocation: `${OIDC_PREFIX}/token/revocation`,
      token: `${OIDC_PREFIX}/token`,
      userinfo: `${OIDC_PREFIX}/me`,
    },
    interactions: {
      url: (_ctx, interaction) => `${OIDC_PREFIX}/interaction/${interaction.uid}`,
    },
    scopes: SUPPORTED_SCOPES,
    claims: { openid: ['sub'], email: ['email'], profile: ['name'] },
    features: {
      devInteractions: { enabled: false },
      revocation: { enabled: true },
      userinfo: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => apiResource,
        useGrantedResource: () => true,
        getResourceServerInfo: (_ctx, resource) => {
          if (resource === apiResource) return resourceServerInfo;
          throw new errors.InvalidTarget();
        },
      },
    },
    pkce: { required: () => true },
    ttl: {
      AccessToken: ttl,
      AuthorizationCode: 60,
      IdToken: 3600,
      Interaction: 3600,
      Session: 14 * 86400,
      Grant: 14 * 86400,
    },
    findAccount: async (_ctx, sub) => {
      const user = await accounts.getUser(sub);
      if (!user || user.disabled) return undefined;
      return {
        accountId: sub,
        claims: () => ({
          sub,
          ...(user.email ? { email: user.email } : {}),
          ...(user.full_name ? { name: user.full_name } : {}),
        }),
      };
    },
    // The docs page is a first-party client: no consent screen, it gets the API scope.
    loadExistingGrant: async (ctx: KoaContextWithOIDC) => {
      const { client, session, provider } = ctx.oidc;
      if (!client || !session?.accountId) return undefined;
      const grantId = ctx.oidc.result?.consent?.grantId ?? session.grantIdFor(client.clientId);
      let grant = grantId ? await provider.Grant.find(grantId) : undefined;
      if (grant && grant.accountId !== session.accountId) grant = undefined;
      if (client.clientId !== DOCS_CLIENT_ID) return grant;
      // The docs page is a first-party client: no consent screen; it gets what it asks for
      // among the supported scopes, and the API scope on the API resource.
      grant ??= new provider.Grant({ clientId: client.clientId, accountId: session.accountId });
      const requested = [...(ctx.oidc.requestParamScopes ?? [])].filter((scope) =>
        SUPPORTED_SCOPES.includes(scope),
      );
      grant.addOIDCScope(['openid', ...requested].join(' '));
      grant.addResourceScope(apiResource, API_SCOPE);
      await grant.save();
      return grant;
    },
    // Tokens of the docs page's sign-in are a user's, under the credentials the user has now
    // (a change of password ends the sign-in sessions, so none outlives it).
    extraTokenClaims: async (_ctx, token) => {
      const given = principalClaims.get(token);
      if (given || token.kind !== 'AccessToken') return given;
      const user = await accounts.getUser(token.accountId);
      return {
        [PRINCIPAL_KIND_CLAIM]: 'user',
        [CREDENTIALS_VERSION_CLAIM]: user ? credentialsVersion(user) : 0,
      };
    },
    renderError: async (ctx, out) => {
      ctx.type = 'html';
      const text = Object.values(out)
        .map((v) => String(v).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`))
        .join(' — ');
      ctx.body = `<!doctype html><meta charset="utf-8"><title>Sign-in error</title><h1>Sign-in error</h1><p>${text}</p>`;
    },
  };

  const provider = new Provider(config.publicUrl, configuration);
  // The service sits behind proxies in production; the issuer URL is configured, not inferred.
  provider.proxy = true;
  provider.registerGrantType(PASSWORD_GRANT, passwordGrant(accounts, apiResource), PASSWORD_GRANT_PARAMS);
  provider.registerGrantType(
    SITE_CLIENT_GRANT,
    siteClientGrant(accounts, apiResource),
    SITE_CLIENT_GRANT_PARAMS,
  );
  if (external) {
    provider.registerGrantType(
      TOKEN_EXCHANGE_GRANT,
      externalIdTokenGrant(accounts, external, apiResource),
      TOKEN_EXCHANGE_GRANT_PARAMS,
    );
  }
  return { provider, apiResource, facadeClientSecret };
}
