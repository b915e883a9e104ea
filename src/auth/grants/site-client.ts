/**
 * Grant for site clients. Their secrets are bcrypt hashes, which the provider's own client
 * authentication cannot check, so the facade's internal client calls this grant with the site
 * client's id and secret as parameters.
 */
import { errors, type KoaContextWithOIDC } from 'oidc-provider';
import { credentialsVersion, type Accounts } from '../../accounts/index.ts';
import { CREDENTIALS_VERSION_CLAIM, PRINCIPAL_KIND_CLAIM, SITE_ID_CLAIM } from '../resource.ts';
import { issueApiAccessToken } from './issue-access-token.ts';

export const SITE_CLIENT_GRANT = 'urn:nmdc:params:oauth:grant-type:site-client';
export const SITE_CLIENT_GRANT_PARAMS = ['site_client_id', 'site_client_secret'];

export function siteClientGrant(accounts: Accounts, apiResource: string) {
  return async (ctx: KoaContextWithOIDC): Promise<void> => {
    const params = ctx.oidc.params as { site_client_id?: string; site_client_secret?: string };
    const client = await accounts.verifySiteClient(
      String(params.site_client_id ?? ''),
      String(params.site_client_secret ?? ''),
    );
    if (!client) throw new errors.InvalidGrant('Incorrect client_id or client_secret');
    await issueApiAccessToken(ctx, apiResource, client.client_id, SITE_CLIENT_GRANT, {
      [PRINCIPAL_KIND_CLAIM]: 'site_client',
      [SITE_ID_CLAIM]: client.site_id,
      [CREDENTIALS_VERSION_CLAIM]: credentialsVersion(client),
    });
  };
}
