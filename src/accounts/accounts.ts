/**
 * Users, sites and site clients: the rules, persisted as records of the collections `users`,
 * `sites` and `site_clients` through the DocumentStore.
 */
import { randomBytes } from 'node:crypto';
import type { Doc, DocumentStore, Filter, Projection } from '../store/port.ts';
import { Conflict, Forbidden, NotFound, Unprocessable } from '../errors.ts';
import { passwordProblem, type PasswordRules } from './password-policy.ts';
import {
  FORMER_RUNTIME_ADMIN_SITES,
  RUNTIME_ADMIN_SITE,
  SITES,
  SITE_CLIENTS,
  USERS,
  credentialsVersion,
  type SiteClientRecord,
  type SiteRecord,
  type UserRecord,
} from './records.ts';
import { generateSecret, hashSecret, verifySecret } from './secrets.ts';
import { CAPABILITIES } from '../workflows/catalog.ts';

export interface NewUser {
  username: string;
  password?: string;
  site_admin?: string[];
  email?: string;
  full_name?: string;
}

/** What `PUT /users` may change: any of these; an absent member is left as it is. */
export interface UserChanges {
  password?: string;
  email?: string;
  full_name?: string;
  site_admin?: string[];
  disabled?: boolean;
}

/**
 * Credentials that changed: a user's password (or the user was disabled), a site client's secret
 * (or the client was revoked). Every token issued before is already refused by then; listeners end
 * what else was granted on the old credentials (the provider's sign-in sessions).
 */
export interface CredentialsChange {
  kind: 'user' | 'site_client';
  id: string;
}

/** Who asks to list sites: a user by username, or a site client of `siteId`. */
export interface SiteReader {
  kind: 'user' | 'site_client';
  subject: string;
  siteId?: string;
}

export class Accounts {
  private readonly credentialsListeners: Array<(change: CredentialsChange) => Promise<void>> = [];

  constructor(
    private readonly store: DocumentStore,
    /** The password rules every chosen password must pass (PASSWORD_MIN_LENGTH). */
    private readonly passwordRules: PasswordRules = {},
  ) {}

  /** 422 naming the rule a chosen password breaks. */
  async checkPassword(username: string, password: string): Promise<void> {
    const problem = await passwordProblem(password, { username }, this.passwordRules);
    if (problem) throw new Unprocessable(problem);
  }

  /** Called after each change of credentials (see CredentialsChange), in the order registered. */
  whenCredentialsChange(listener: (change: CredentialsChange) => Promise<void>): void {
    this.credentialsListeners.push(listener);
  }

  private async credentialsChanged(change: CredentialsChange): Promise<void> {
    for (const listener of this.credentialsListeners) await listener(change);
  }

  private async save(collection: string, record: UserRecord | SiteRecord | SiteClientRecord): Promise<void> {
    await this.store.upsertMany(collection, [record as unknown as Doc]);
  }

  async getUser(username: string): Promise<UserRecord | null> {
    return (await this.store.getById(USERS, username)) as UserRecord | null;
  }

  async getSite(id: string): Promise<SiteRecord | null> {
    return (await this.store.getById(SITES, id)) as SiteRecord | null;
  }

  async getSiteClient(clientId: string): Promise<SiteClientRecord | null> {
    return (await this.store.getById(SITE_CLIENTS, clientId)) as SiteClientRecord | null;
  }

  isRuntimeAdmin(user: Pick<UserRecord, 'site_admin'>): boolean {
    return user.site_admin.some(
      (site) => site === RUNTIME_ADMIN_SITE || FORMER_RUNTIME_ADMIN_SITES.includes(site),
    );
  }

  /** Creates a user; 422 when the password breaks a rule, 409 when the username is taken. */
  async createUser(input: NewUser): Promise<UserRecord> {
    if (input.password !== undefined) await this.checkPassword(input.username, input.password);
    const user: UserRecord = {
      id: input.username,
      username: input.username,
      site_admin: [...new Set(input.site_admin ?? [])],
      disabled: false,
      created_at: new Date().toISOString(),
    };
    if (input.password !== undefined) user.password_hash = await hashSecret(input.password);
    if (input.email !== undefined) user.email = input.email;
    if (input.full_name !== undefined) user.full_name = input.full_name;
    // The store decides atomically, so of two creates racing for one username exactly one wins.
    if (!(await this.store.insertIfAbsent(USERS, user as unknown as Doc))) {
      throw new Conflict(`User ${input.username} already exists`);
    }
    return user;
  }

  /**
   * Sets a user's password, creating the user when absent (start-up administrator, create-admin);
   * 422 when the password breaks a rule. Setting the password a user already has changes nothing
   * (a restart with the same ADMIN_PASSWORD keeps everyone's tokens) unless `reset` is given; a
   * new password, or a reset, ends every token issued before.
   */
  async setPassword(
    username: string,
    password: string,
    extraSites: string[] = [],
    options: { reset?: boolean } = {},
  ): Promise<UserRecord> {
    await this.checkPassword(username, password);
    const existing = await this.getUser(username);
    if (!existing) {
      const user: UserRecord = {
        id: username,
        username,
        site_admin: [...new Set(extraSites)],
        disabled: false,
        created_at: new Date().toISOString(),
        password_hash: await hashSecret(password),
      };
      if (await this.store.insertIfAbsent(USERS, user as unknown as Doc)) return user;
    }
    const unchanged =
      !options.reset &&
      existing?.password_hash !== undefined &&
      (await verifySecret(password, existing.password_hash));
    const hash = unchanged ? undefined : await hashSecret(password);
    const user = await this.modifyUser(username, (current) => ({
      ...current,
      site_admin: [...new Set([...current.site_admin, ...extraSites])],
      ...(hash === undefined
        ? {}
        : { password_hash: hash, credentials_version: credentialsVersion(current) + 1 }),
    }));
    if (hash !== undefined) await this.credentialsChanged({ kind: 'user', id: username });
    return user;
  }

  /**
   * `PUT /users`: changes what `changes` holds of user `username` (404 when there is none). A new
   * password must pass the password rules (422) and, like disabling the user, ends every token
   * issued before.
   */
  async updateUser(username: string, changes: UserChanges): Promise<UserRecord> {
    if (changes.password !== undefined) await this.checkPassword(username, changes.password);
    if (!(await this.getUser(username))) throw new NotFound(`No user named '${username}'`);
    const hash = changes.password === undefined ? undefined : await hashSecret(changes.password);
    let endsTokens = false;
    const user = await this.modifyUser(username, (current) => {
      const next: UserRecord = { ...current };
      if (hash !== undefined) next.password_hash = hash;
      if (changes.email !== undefined) next.email = changes.email;
      if (changes.full_name !== undefined) next.full_name = changes.full_name;
      if (changes.site_admin !== undefined) next.site_admin = [...new Set(changes.site_admin)];
      if (changes.disabled !== undefined) next.disabled = changes.disabled;
      // Disabling ends the tokens too, so enabling the user again does not bring them back.
      endsTokens = hash !== undefined || (changes.disabled === true && !current.disabled);
      if (endsTokens) next.credentials_version = credentialsVersion(current) + 1;
      return next;
    });
    if (endsTokens) await this.credentialsChanged({ kind: 'user', id: username });
    return user;
  }

  /**
   * A user changes their own password: `current` must be their password (403 otherwise, and for
   * users who sign in only through the external issuer), `next` must pass the password rules
   * (422). Ends every token issued before.
   */
  async changeOwnPassword(username: string, current: string, next: string): Promise<UserRecord> {
    const user = await this.getUser(username);
    if (user && user.password_hash === undefined) {
      throw new Forbidden(
        'This account signs in through the external issuer and has no password here; a runtime administrator can set one (PUT /users)',
      );
    }
    if (!(await this.verifyPassword(username, current))) {
      throw new Forbidden('current_password is not the password of this account');
    }
    return this.updateUser(username, { password: next });
  }

  /** Reads, changes and writes user `username` in one transaction; 404 when there is none. */
  private modifyUser(username: string, change: (user: UserRecord) => UserRecord): Promise<UserRecord> {
    return this.store.readModifyWrite([{ collection: USERS, id: username }], ([current]) => {
      if (!current) throw new NotFound(`No user named '${username}'`);
      const next = change(current as unknown as UserRecord);
      return { writes: [{ collection: USERS, docs: [next as unknown as Doc] }], value: next };
    });
  }

  /** The user for a valid username/password pair, else null (same work either way). */
  async verifyPassword(username: string, password: string): Promise<UserRecord | null> {
    const user = await this.getUser(username);
    const usable = user && !user.disabled ? user.password_hash : undefined;
    const ok = await verifySecret(password, usable);
    return ok && user ? user : null;
  }

  /** The user signed in at the external issuer as `subject`, created on first sign-in. */
  async userForExternalSubject(
    subject: string,
    claims: { email?: string; name?: string } = {},
  ): Promise<UserRecord> {
    const existing = await this.getUser(subject);
    if (existing) return existing;
    const user: UserRecord = {
      id: subject,
      username: subject,
      site_admin: [],
      disabled: false,
      external_subject: subject,
      created_at: new Date().toISOString(),
    };
    if (claims.email) user.email = claims.email;
    if (claims.name) user.full_name = claims.name;
    // Two first sign-ins at once: the one that lost the insert answers the winner's record.
    if (!(await this.store.insertIfAbsent(USERS, user as unknown as Doc)))
      return (await this.getUser(subject))!;
    return user;
  }

  /** Creates a site and makes `adminUsername` its administrator; 409 when the id exists. */
  async createSite(id: string, capabilityIds: string[], adminUsername: string): Promise<SiteRecord> {
    const site: SiteRecord = {
      id,
      capability_ids: [...new Set(capabilityIds)],
      created_at: new Date().toISOString(),
    };
    if (!(await this.store.insertIfAbsent(SITES, site as unknown as Doc))) {
      throw new Conflict(`Site ${id} already exists`);
    }
    await this.addSiteAdmin(adminUsername, id);
    return site;
  }

  /**
   * The sites a caller may list, as a filter: every site for a runtime administrator, the sites a
   * user administers, a site client's own site.
   */
  async sitesVisibleTo(caller: SiteReader): Promise<Filter> {
    if (caller.kind === 'site_client') return { id: caller.siteId ?? null };
    const user = await this.getUser(caller.subject);
    if (!user || user.disabled) return { id: { $in: [] } };
    return this.isRuntimeAdmin(user) ? {} : { id: { $in: user.site_admin } };
  }

  /** Sites matching `filter` in id order, after `afterId`, at most `limit`. */
  async findSites(
    filter: Filter,
    page: { projection?: Projection; afterId?: string; limit?: number },
  ): Promise<Doc[]> {
    return this.store.find(SITES, filter, page);
  }

  /** The site, for one of its administrators or a runtime administrator (403), 404 when unknown. */
  async administeredSite(siteId: string, requester: UserRecord): Promise<SiteRecord> {
    const site = await this.getSite(siteId);
    if (!site) throw new NotFound(`No site with id '${siteId}'`);
    if (!this.isRuntimeAdmin(requester) && !requester.site_admin.includes(siteId)) {
      throw new Forbidden(`You are not an administrator of site ${siteId}`);
    }
    return site;
  }

  /**
   * Replaces a site's capabilities (PATCH /sites/{site_id}, PUT /sites/{site_id}/capabilities):
   * 404 for an unknown site, 403 unless `requester` administers it or is a runtime administrator,
   * 422 naming the ids the workflow catalog does not hold. The site and the capabilities are read
   * and the site written in one transaction, so a concurrent edit is never half applied.
   */
  async setSiteCapabilities(
    siteId: string,
    capabilityIds: string[],
    requester: UserRecord,
  ): Promise<SiteRecord> {
    await this.administeredSite(siteId, requester);
    const wanted = [...new Set(capabilityIds)];
    return this.store.readModifyWrite(
      [{ collection: SITES, id: siteId }, ...wanted.map((id) => ({ collection: CAPABILITIES, id }))],
      ([site, ...capabilities]) => {
        if (!site) throw new NotFound(`No site with id '${siteId}'`);
        const unknown = wanted.filter((_, i) => capabilities[i] === null);
        if (unknown.length > 0) {
          throw new Unprocessable(
            `Unknown capability ids (not in the workflow catalog, see GET /capabilities): ${unknown.join(', ')}`,
          );
        }
        const updated = { ...(site as unknown as SiteRecord), capability_ids: wanted };
        return { writes: [{ collection: SITES, docs: [updated as unknown as Doc] }], value: updated };
      },
    );
  }

  /** Creates the site when absent (start-up: the runtime administrators' site). */
  async ensureSite(id: string): Promise<void> {
    // Insert-if-absent: several processes starting at once all end with the one site.
    await this.store.insertIfAbsent(SITES, { id, capability_ids: [], created_at: new Date().toISOString() });
  }

  async addSiteAdmin(username: string, siteId: string): Promise<void> {
    const user = await this.getUser(username);
    if (!user) throw new NotFound();
    if (user.site_admin.includes(siteId)) return;
    user.site_admin = [...user.site_admin, siteId];
    await this.save(USERS, user);
  }

  /**
   * New credentials for a site, answered once: only the secret's hash is kept. Only an
   * administrator of the site may ask (403), and the site must exist (404).
   */
  async generateSiteCredentials(
    siteId: string,
    requester: UserRecord,
  ): Promise<{ client_id: string; client_secret: string }> {
    const site = await this.getSite(siteId);
    if (!site) throw new NotFound();
    if (!requester.site_admin.includes(siteId)) {
      throw new Forbidden(`You are not an administrator of site ${siteId}`);
    }
    const clientId = `sys0${randomBytes(8).toString('hex')}`;
    const secret = generateSecret();
    const record: SiteClientRecord = {
      id: clientId,
      client_id: clientId,
      secret_hash: await hashSecret(secret),
      site_id: siteId,
      created_at: new Date().toISOString(),
    };
    await this.save(SITE_CLIENTS, record);
    return { client_id: clientId, client_secret: secret };
  }

  /**
   * Gives site client `clientId` a new secret (`PATCH /admin/site_clients/{id}`): 404 when there is
   * no such client. Every token issued with the old secret stops working.
   */
  async setSiteClientSecret(clientId: string, secret: string): Promise<SiteClientRecord> {
    const hash = await hashSecret(secret);
    const client = await this.store.readModifyWrite(
      [{ collection: SITE_CLIENTS, id: clientId }],
      ([current]) => {
        if (!current) throw new NotFound(`No site client with id '${clientId}'`);
        const record = current as unknown as SiteClientRecord;
        const next: SiteClientRecord = {
          ...record,
          secret_hash: hash,
          credentials_version: credentialsVersion(record) + 1,
        };
        return { writes: [{ collection: SITE_CLIENTS, docs: [next as unknown as Doc] }], value: next };
      },
    );
    await this.credentialsChanged({ kind: 'site_client', id: clientId });
    return client;
  }

  /** Removes site client `clientId` (404 when there is none): its secret and tokens stop working. */
  async revokeSiteClient(clientId: string): Promise<SiteClientRecord> {
    const client = await this.getSiteClient(clientId);
    if (!client || (await this.store.deleteMany(SITE_CLIENTS, { id: clientId })).length === 0) {
      throw new NotFound(`No site client with id '${clientId}'`);
    }
    await this.credentialsChanged({ kind: 'site_client', id: clientId });
    return client;
  }

  /** The site client for a valid client_id/secret pair, else null (same work either way). */
  async verifySiteClient(clientId: string, secret: string): Promise<SiteClientRecord | null> {
    const client = await this.getSiteClient(clientId);
    const ok = await verifySecret(secret, client?.secret_hash);
    return ok && client ? client : null;
  }
}
