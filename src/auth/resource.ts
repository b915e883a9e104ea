/** The service's API as an OAuth resource: the audience of every access token it accepts. */
export const API_SCOPE = 'api';

export function apiResourceOf(publicUrl: string): string {
  return `${publicUrl}/api`;
}

/** Claim naming what kind of principal a token stands for (`user` or `site_client`). */
export const PRINCIPAL_KIND_CLAIM = 'nmdc_principal';
export const SITE_ID_CLAIM = 'site_id';
/**
 * Claim holding the credentials version of the user or site client when the token was issued: a
 * changed password or secret raises the version, and tokens carrying an older one are refused.
 */
export const CREDENTIALS_VERSION_CLAIM = 'nmdc_credentials_version';
