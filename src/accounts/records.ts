/**
 * Account records as stored through the DocumentStore, and their public shapes.
 * Secrets are stored only as bcrypt hashes and never leave this module's callers in a response.
 */

export const USERS = 'users';
export const SITES = 'sites';
export const SITE_CLIENTS = 'site_clients';

/** Administrators of this site are the runtime administrators (the original service's name for it). */
export const RUNTIME_ADMIN_SITE = 'nmdc-runtime-useradmin';

/** The name earlier releases of this service gave that site: its administrators stay runtime administrators. */
export const FORMER_RUNTIME_ADMIN_SITES: readonly string[] = ['svc-runtime-useradmin'];

export interface UserRecord {
  /** Same as `username`: the store's key. */
  id: string;
  username: string;
  /** bcrypt hash; absent for users who only sign in through the external issuer. */
  password_hash?: string;
  site_admin: string[];
  email?: string;
  full_name?: string;
  disabled: boolean;
  /** Subject at the external issuer, for users created by an external sign-in. */
  external_subject?: string;
  /**
   * Raised each time the password is changed or the account disabled; access tokens carry the
   * value they were issued under and stop working when it moves on. Absent means 0.
   */
  credentials_version?: number;
  created_at: string;
}

export interface SiteRecord {
  id: string;
  capability_ids: string[];
  created_at: string;
}

export interface SiteClientRecord {
  /** Same as `client_id`. */
  id: string;
  client_id: string;
  secret_hash: string;
  site_id: string;
  /** Raised each time the secret is changed; tokens issued before stop working. Absent means 0. */
  credentials_version?: number;
  created_at: string;
}

/** The credentials version of a user or site client (records written before versions hold none). */
export function credentialsVersion(record: { credentials_version?: number }): number {
  return record.credentials_version ?? 0;
}

/** What `GET /users/me` and `POST /users` answer: never a password or hash. */
export interface PublicUser {
  username: string;
  site_admin: string[];
  email?: string;
  full_name?: string;
  disabled: boolean;
}

export interface PublicSite {
  id: string;
  capability_ids: string[];
}

export function publicUser(user: UserRecord): PublicUser {
  const out: PublicUser = {
    username: user.username,
    site_admin: [...user.site_admin],
    disabled: user.disabled,
  };
  if (user.email !== undefined) out.email = user.email;
  if (user.full_name !== undefined) out.full_name = user.full_name;
  return out;
}

export function publicSite(site: SiteRecord): PublicSite {
  return { id: site.id, capability_ids: [...site.capability_ids] };
}
