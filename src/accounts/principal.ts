/**
 * Who is calling a private endpoint. Defined here, beside the accounts it stands for, so that
 * `src/auth` (which builds principals from tokens) depends on `src/accounts` and never the reverse.
 */

/** Set on `res.locals.principal` by the bearer guard. */
export interface Principal {
  kind: 'user' | 'site_client';
  /** The user's username, or for a site client its client_id. */
  subject: string;
  /** Site of a site client. */
  siteId?: string;
  /** Administrators of the site `nmdc-runtime-useradmin`: always permitted every allowance action. */
  isRuntimeAdmin: boolean;
}
