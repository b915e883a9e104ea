/** The service's API as an OAuth resource: the audience of every access token it accepts. */
export const API_SCOPE = 'api';

export function apiResourceOf(publicUrl: string): string {
  return `${publicUrl}/api`;
}

/** Claim naming what kind of principal a token stands for (`user` or `site_client`). */
export const PRINCIPAL_KIND_CLAIM = 'nmdc_principal';
export const SITE_ID_CLAIM = 'site_id';
