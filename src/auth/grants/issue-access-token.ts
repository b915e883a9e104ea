/**
 * Shared tail of the custom grants: an access token for the service's API resource, issued as a
 * JWT by the provider, answered in the provider's token-response shape.
 */
import type { KoaContextWithOIDC } from 'oidc-provider';
import { API_SCOPE } from '../resource.ts';

/** Claims the facade-issued tokens carry beyond the standard ones, keyed by token object. */
export const principalClaims = new WeakMap<object, Record<string, unknown>>();

export async function issueApiAccessToken(
  ctx: KoaContextWithOIDC,
  apiResource: string,
  accountId: string,
  grantType: string,
  claims: Record<string, unknown>,
): Promise<void> {
  const { provider, client } = ctx.oidc;
  const resourceServer = new provider.ResourceServer(apiResource, {
    audience: apiResource,
    accessTokenFormat: 'jwt',
    scope: API_SCOPE,
  });
  // No Grant record: these tokens come from a direct credential check, not a consent, and
  // being JWTs they are not stored either (revocation goes through the revocation list).
  const token = new provider.AccessToken({
    accountId,
    client: client!,
    gty: grantType,
    scope: API_SCOPE,
    resourceServer,
  } as ConstructorParameters<typeof provider.AccessToken>[0]);
  principalClaims.set(token, claims);
  const value = await token.save();
  ctx.body = {
    access_token: value,
    token_type: token.tokenType,
    expires_in: token.expiration,
    scope: API_SCOPE,
  };
}
