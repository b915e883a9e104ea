import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { setBcryptCost } from '../../src/accounts/index.ts';
import {
  getJson,
  passwordToken,
  postJson,
  postToken,
  startAuthServer,
  type AuthServer,
} from './auth-server.ts';

setBcryptCost(4);

describe('users and sites', () => {
  let server: AuthServer;
  let admin: string;
  let researcher: string;
  let siteClientToken: string;

  beforeAll(async () => {
    server = await startAuthServer({ ADMIN_USERNAME: 'root', ADMIN_PASSWORD: 'root-password-1' });
    admin = await passwordToken(server.url, 'root', 'root-password-1');
    await postJson(
      `${server.url}/users`,
      { username: 'researcher', password: 'field notes of a researcher' },
      admin,
    );
    researcher = await passwordToken(server.url, 'researcher', 'field notes of a researcher');
    await postJson(`${server.url}/sites`, { id: 'root-site' }, admin);
    const credentials = await postJson(`${server.url}/sites/root-site:generateCredentials`, {}, admin);
    siteClientToken = (
      await postToken(server.url, {
        grant_type: 'client_credentials',
        ...(credentials.body as Record<string, string>),
      })
    ).body.access_token as string;
  });
  afterAll(async () => server.close());

  describe('POST /users', () => {
    it('creates a user for a runtime administrator and answers 201 without any password or hash', async () => {
      const created = await postJson(
        `${server.url}/users`,
        {
          username: 'newcomer',
          password: 'newcomer-secret-pw',
          site_admin: ['lab-1'],
          email: 'n@example.org',
          full_name: 'New Comer',
        },
        admin,
      );
      expect(created.status).toBe(201);
      expect(created.body).toEqual({
        username: 'newcomer',
        site_admin: ['lab-1'],
        email: 'n@example.org',
        full_name: 'New Comer',
        disabled: false,
      });
      expect(created.text).not.toContain('newcomer-secret-pw');
      expect(created.text).not.toMatch(/hash|\$2[aby]\$/);
      const stored = (await server.store.getById('users', 'newcomer'))!;
      expect(stored.password_hash).toMatch(/^\$2[aby]\$/);
      expect(JSON.stringify(stored)).not.toContain('newcomer-secret-pw');
      // The new user can log in with the password.
      expect(
        (
          await postToken(server.url, {
            grant_type: 'password',
            username: 'newcomer',
            password: 'newcomer-secret-pw',
          })
        ).status,
      ).toBe(200);
    });

    it('answers 403 to a user who is not a runtime administrator', async () => {
      const answer = await postJson(
        `${server.url}/users`,
        { username: 'intruder', password: 'intruder tries a door' },
        researcher,
      );
      expect(answer.status).toBe(403);
      expect(answer.body).toEqual({ detail: 'Only runtime administrators may create users' });
      expect(await server.store.getById('users', 'intruder')).toBeNull();
    });

    it('answers 403 to a site client', async () => {
      const answer = await postJson(
        `${server.url}/users`,
        { username: 'by-client', password: 'client made this account' },
        siteClientToken,
      );
      expect(answer.status).toBe(403);
      expect(answer.body).toEqual({ detail: 'This operation needs a user login, not a site client' });
    });

    it('answers 409 when the username exists, leaving its password unchanged', async () => {
      const answer = await postJson(
        `${server.url}/users`,
        { username: 'researcher', password: 'takeover of a username' },
        admin,
      );
      expect(answer.status).toBe(409);
      expect(answer.body).toEqual({ detail: 'User researcher already exists' });
      expect(
        (
          await postToken(server.url, {
            grant_type: 'password',
            username: 'researcher',
            password: 'field notes of a researcher',
          })
        ).status,
      ).toBe(200);
    });

    it('answers 401 without a token', async () => {
      const answer = await postJson(`${server.url}/users`, {
        username: 'anon',
        password: 'anonymous visitor at noon',
      });
      expect(answer.status).toBe(401);
      expect(answer.body).toEqual({ detail: 'Access token is invalid or missing. Please log in again.' });
    });
  });

  describe('GET /users/me', () => {
    it('answers the caller without a password or hash', async () => {
      const me = await getJson(`${server.url}/users/me`, researcher);
      expect(me.body).toEqual({ username: 'researcher', site_admin: [], disabled: false });
    });
  });

  describe('POST /sites and GET /sites/{site_id}', () => {
    it('creates a site, makes the caller its administrator and answers 201', async () => {
      const created = await postJson(
        `${server.url}/sites`,
        { id: 'lab-west', capability_ids: ['cap-a'] },
        researcher,
      );
      expect(created.status).toBe(201);
      expect(created.body).toEqual({ id: 'lab-west', capability_ids: ['cap-a'] });
      expect((await getJson(`${server.url}/users/me`, researcher)).body.site_admin).toEqual(['lab-west']);
      expect(await getJson(`${server.url}/sites/lab-west`, researcher)).toMatchObject({
        status: 200,
        body: { id: 'lab-west', capability_ids: ['cap-a'] },
      });
    });

    it('answers 409 when the site id exists', async () => {
      await postJson(`${server.url}/sites`, { id: 'lab-taken' }, admin);
      const answer = await postJson(`${server.url}/sites`, { id: 'lab-taken' }, researcher);
      expect(answer.status).toBe(409);
      expect(answer.body).toEqual({ detail: 'Site lab-taken already exists' });
      expect((await getJson(`${server.url}/users/me`, researcher)).body.site_admin).not.toContain(
        'lab-taken',
      );
    });

    it('reads a site without a token, as the original does', async () => {
      const { status, body } = await getJson(`${server.url}/sites/root-site`);
      expect({ status, body }).toEqual({ status: 200, body: { id: 'root-site', capability_ids: [] } });
    });

    it('answers 404 for an unknown site', async () => {
      expect(await getJson(`${server.url}/sites/no-such-site`, researcher)).toMatchObject({
        status: 404,
        body: { detail: 'Not found' },
      });
    });
  });

  describe('GET /sites', () => {
    const siteIds = (body: unknown) =>
      (body as { resources: Array<{ id: string }> }).resources.map((r) => r.id);
    /** Status and body only: bodies are compared whole, so no stored field can leak unseen. */
    const listSites = async (query: string, token?: string) => {
      const { status, body } = await getJson(`${server.url}/sites${query}`, token);
      return { status, body };
    };

    it('lists only the sites a user administers, in id order', async () => {
      const viewer = 'site-viewer';
      await postJson(`${server.url}/users`, { username: viewer, password: 'a viewer of many sites' }, admin);
      const token = await passwordToken(server.url, viewer, 'a viewer of many sites');
      expect(await listSites('', token)).toEqual({ status: 200, body: { resources: [] } });
      for (const id of ['view-b', 'view-a', 'view-c']) await postJson(`${server.url}/sites`, { id }, token);
      expect(await listSites('', token)).toEqual({
        status: 200,
        body: {
          resources: [
            { id: 'view-a', capability_ids: [] },
            { id: 'view-b', capability_ids: [] },
            { id: 'view-c', capability_ids: [] },
          ],
        },
      });
    });

    it('lists every site for a runtime administrator, paged with tokens', async () => {
      const everySite = (await server.store.find('sites', {})).map((s) => s.id).sort();
      expect(everySite.length).toBeGreaterThan(3);
      const first = await getJson(`${server.url}/sites?max_page_size=2`, admin);
      expect(first.status).toBe(200);
      const seen = siteIds(first.body);
      let token = (first.body as { next_page_token?: string }).next_page_token;
      while (token) {
        const next = await getJson(`${server.url}/sites?max_page_size=2&page_token=${token}`, admin);
        seen.push(...siteIds(next.body));
        token = (next.body as { next_page_token?: string }).next_page_token;
      }
      expect(seen).toEqual(everySite);
    });

    it('lists a site client its own site only', async () => {
      expect(await listSites('', siteClientToken)).toEqual({
        status: 200,
        body: { resources: [{ id: 'root-site', capability_ids: [] }] },
      });
    });

    it('narrows by a JSON filter inside what the caller may see', async () => {
      await postJson(`${server.url}/sites`, { id: 'filter-gpu', capability_ids: ['gpu'] }, researcher);
      const filter = encodeURIComponent('{"capability_ids": "gpu"}');
      expect(await listSites(`?filter=${filter}`, researcher)).toEqual({
        status: 200,
        body: { resources: [{ id: 'filter-gpu', capability_ids: ['gpu'] }] },
      });
      // A filter cannot widen the listing to sites the caller does not administer.
      const others = encodeURIComponent('{"id": "root-site"}');
      expect(await listSites(`?filter=${others}`, researcher)).toEqual({
        status: 200,
        body: { resources: [] },
      });
    });

    it('refuses a page token made for another caller, and a filter that is not JSON', async () => {
      const first = await getJson(`${server.url}/sites?max_page_size=1`, admin);
      const token = (first.body as { next_page_token: string }).next_page_token;
      expect(await listSites(`?page_token=${token}`, researcher)).toEqual({
        status: 400,
        body: { detail: '`page_token` not found' },
      });
      const bad = await listSites('?filter=nope', researcher);
      expect(bad.status).toBe(422);
      expect((bad.body as { detail: string }).detail).toMatch(/^Filter is not valid JSON/);
    });

    it('answers 401 without a token', async () => {
      expect(await listSites('')).toEqual({
        status: 401,
        body: { detail: 'Access token is invalid or missing. Please log in again.' },
      });
    });
  });

  describe('POST /sites/{site_id}:generateCredentials', () => {
    it('answers the client_id and client_secret once to an administrator of the site, storing only a hash', async () => {
      await postJson(`${server.url}/sites`, { id: 'lab-creds' }, researcher);
      const answer = await postJson(`${server.url}/sites/lab-creds:generateCredentials`, {}, researcher);
      expect(answer.status).toBe(200);
      expect(Object.keys(answer.body).sort()).toEqual(['client_id', 'client_secret']);
      const { client_id, client_secret } = answer.body as Record<string, string>;
      expect(client_secret.length).toBeGreaterThanOrEqual(32);
      const stored = (await server.store.getById('site_clients', client_id))!;
      expect(stored).toMatchObject({ client_id, site_id: 'lab-creds' });
      expect(stored.secret_hash).toMatch(/^\$2[aby]\$/);
      expect(JSON.stringify(stored)).not.toContain(client_secret);
      const again = await postJson(`${server.url}/sites/lab-creds:generateCredentials`, {}, researcher);
      expect(again.body.client_id).not.toBe(client_id);
    });

    it('answers 403 to a user who does not administer the site', async () => {
      const answer = await postJson(`${server.url}/sites/root-site:generateCredentials`, {}, researcher);
      expect(answer.status).toBe(403);
      expect(answer.body).toEqual({ detail: 'You are not an administrator of site root-site' });
    });

    it('answers 404 for an unknown site', async () => {
      const answer = await postJson(`${server.url}/sites/ghost-site:generateCredentials`, {}, admin);
      expect(answer).toMatchObject({ status: 404, body: { detail: 'Not found' } });
    });
  });
});
