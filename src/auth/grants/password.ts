/** Grant `password`: a user's username and password (checked against the bcrypt hash). */
import { errors, type KoaContextWithOIDC } from 'oidc-provider';
import { credentialsVersion, type Accounts } from '../../accounts/index.ts';
import { CREDENTIALS_VERSION_CLAIM, PRINCIPAL_KIND_CLAIM } from '../resource.ts';
import { issueApiAccessToken } from './issue-access-token.ts';

export const PASSWORD_GRANT = 'password';
export const PASSWORD_GRANT_PARAMS = ['username', 'password'];

export function passwordGrant(accounts: Accounts, apiResource: string) {
  return async (ctx: KoaContextWithOIDC): Promise<void> => {
    const { username, password } = ctx.oidc.params as { username?: string; password?: string };
    const user = await accounts.verifyPassword(String(username ?? ''), String(password ?? ''));
    if (!user) throw new errors.InvalidGrant('Incorrect username or password');
    await issueApiAccessToken(ctx, apiResource, user.username, PASSWORD_GRANT, {
      [PRINCIPAL_KIND_CLAIM]: 'user',
      [CREDENTIALS_VERSION_CLAIM]: credentialsVersion(user),
    });
  };
}
