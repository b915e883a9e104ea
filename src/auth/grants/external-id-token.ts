/**
 * Token exchange (RFC 8693) of an id_token from the configured external issuer for the
 * service's own access token; the researcher's user is created on first use.
 */
import { errors, type KoaContextWithOIDC } from 'oidc-provider';
import type { ExternalIdentity } from '../external-identity.ts';
import { credentialsVersion, type Accounts } from '../../accounts/index.ts';
import { CREDENTIALS_VERSION_CLAIM, PRINCIPAL_KIND_CLAIM } from '../resource.ts';
import { issueApiAccessToken } from './issue-access-token.ts';

export const TOKEN_EXCHANGE_GRANT = 'urn:ietf:params:oauth:grant-type:token-exchange';
export const TOKEN_EXCHANGE_GRANT_PARAMS = ['subject_token', 'subject_token_type'];
export const ID_TOKEN_TYPE = 'urn:ietf:params:oauth:token-type:id_token';

export function externalIdTokenGrant(accounts: Accounts, external: ExternalIdentity, apiResource: string) {
  return async (ctx: KoaContextWithOIDC): Promise<void> => {
    const params = ctx.oidc.params as { subject_token?: string; subject_token_type?: string };
    if (params.subject_token_type !== ID_TOKEN_TYPE) {
      throw new errors.InvalidRequest('subject_token_type must be an id_token');
    }
    const identity = await external.verifyIdToken(String(params.subject_token ?? ''));
    if (!identity) throw new errors.InvalidGrant('Incorrect client_id or client_secret');
    const user = await accounts.userForExternalSubject(identity.sub, identity);
    if (user.disabled) throw new errors.InvalidGrant('Incorrect client_id or client_secret');
    await issueApiAccessToken(ctx, apiResource, user.username, TOKEN_EXCHANGE_GRANT, {
      [PRINCIPAL_KIND_CLAIM]: 'user',
      [CREDENTIALS_VERSION_CLAIM]: credentialsVersion(user),
    });
  };
}
