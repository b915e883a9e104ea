/**
 * Credentials that can be changed and revoked, through the whole app (request and response
 * validation included): `PUT /users` (an administrator sets a password, as in the original),
 * `POST /users/me:changePassword` (a user changes their own),
 * `PATCH /admin/site_clients/{id}` (a new secret, behind the `/admin/site_clients` allowance) and
 * `DELETE /admin/site_clients/{id}` (revocation). Every change ends the tokens issued before it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import request from 'supertest';
import { setBcryptCost } from '../../src/accounts/index.ts';
import { INVALIDATED } from '../../src/auth/access-tokens.ts';
import { TOO_MANY_FOR_ACCOUNT_AND_ADDRESS, loginLimits } from '../../src/auth/login-rate-limit.ts';
import { createTestApp, newSiteClient, passwordToken, type TestApp } from '../support/server.ts';

setBcryptCost(4);

const ADMIN = { username: 'cred-root', password: 'Rk7-osprey-lagoon-41-basalt' };
const CLERK = { username: 'cred-clerk', password: 'Vn2-meadow-copper-58-finch' };

let t: TestApp;
let admin: Record<string, string>;
let clerk: Record<string, string>;

const bearer = (token: string) => ({ Authorization: `Bearer ${token}` });
const login = (form: Record<string, string>) => request(t.app).post('/token').type('form').send(form);
const loginAs = (username: string, password: string) => login({ grant_type: 'password', username, password });
const me = (auth: Record<string, string>) => request(t.app).get('/users/me').set(auth);

async function newUser(username: string, password: string): Promise<Record<string, string>> {
  const created = await request(t.app).post('/users').set(admin).send({ username, password });
  expect(created.status, created.text).toBe(201);
  return bearer(await passwordToken(t.app, username, password));
}

beforeAll(async () => {
  t = await createTestApp({ ADMIN_USERNAME: ADMIN.username, ADMIN_PASSWORD: ADMIN.password });
  admin = bearer(await passwordToken(t.app, ADMIN.username, ADMIN.password));
  clerk = await newUser(CLERK.username, CLERK.password);
}, 30_000);
afterAll(async () => t?.close());

describe('PUT /users', () => {
  it("sets a user's password: the new one logs in, the old one and every earlier token do not", async () => {
    const before = await newUser('cred-alice', 'Pb5-tundra-violet-23-crane');
    const put = await request(t.app)
      .put('/users')
      .set(admin)
      .send({ username: 'cred-alice', password: 'Hq9-saltmarsh-amber-67-ibis' });
    expect(put.status, put.text).toBe(200);
    expect(put.body).toEqual({ username: 'cred-alice', site_admin: [], disabled: false });

    const stale = await me(before);
    expect(stale.status).toBe(401);
    expect(stale.body).toEqual({ detail: INVALIDATED });
    const old = await loginAs('cred-alice', 'Pb5-tundra-violet-23-crane');
    expect(old.status).toBe(401);
    expect(old.body).toEqual({ detail: 'Incorrect username or password' });
    const fresh = bearer(await passwordToken(t.app, 'cred-alice', 'Hq9-saltmarsh-amber-67-ibis'));
    expect((await me(fresh)).body).toEqual({ username: 'cred-alice', site_admin: [], disabled: false });
  });

  it('applies the password rules (422 naming the rule) and then changes nothing', async () => {
    const token = await newUser('cred-bob', 'Tc4-glacier-olive-82-heron');
    for (const [password, rule] of [
      ['short1', 'at least 12 characters'],
      ['password1234', 'common passwords'],
      ['cred-bob-cred-bob', 'username'],
    ]) {
      const res = await request(t.app).put('/users').set(admin).send({ username: 'cred-bob', password });
      expect(res.status, res.text).toBe(422);
      expect(res.body.detail).toContain(rule);
      expect(res.body.detail).not.toContain(password);
    }
    expect((await me(token)).status).toBe(200);
    expect((await loginAs('cred-bob', 'Tc4-glacier-olive-82-heron')).status).toBe(200);
  });

  it('changes only the members given; an empty password leaves the password and the tokens alone', async () => {
    const token = await newUser('cred-carol', 'Wd6-prairie-cobalt-14-loon');
    const res = await request(t.app)
      .put('/users')
      .set(admin)
      .send({ username: 'cred-carol', password: '', email: 'carol@example.org', site_admin: ['carol-lab'] });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toEqual({
      username: 'cred-carol',
      site_admin: ['carol-lab'],
      email: 'carol@example.org',
      disabled: false,
    });
    const again = await request(t.app)
      .put('/users')
      .set(admin)
      .send({ username: 'cred-carol', full_name: 'Carol C' });
    expect(again.body).toEqual({ ...res.body, full_name: 'Carol C' });
    expect((await me(token)).body).toEqual(again.body);
  });

  it('ends the tokens of a user it disables; enabling the user again does not bring them back', async () => {
    const token = await newUser('cred-dave', 'Ym3-estuary-russet-90-tern');
    const disabled = await request(t.app)
      .put('/users')
      .set(admin)
      .send({ username: 'cred-dave', disabled: true });
    expect(disabled.body).toEqual({ username: 'cred-dave', site_admin: [], disabled: true });
    expect((await me(token)).body).toEqual({ detail: INVALIDATED });
    await request(t.app)
      .put('/users')
      .set(admin)
      .send({ username: 'cred-dave', disabled: false })
      .expect(200);
    expect((await me(token)).body).toEqual({ detail: INVALIDATED });
    expect((await loginAs('cred-dave', 'Ym3-estuary-russet-90-tern')).status).toBe(200);
  });

  it('is for runtime administrators (403), names an unknown user (404) and needs a username', async () => {
    const refused = await request(t.app)
      .put('/users')
      .set(clerk)
      .send({ username: CLERK.username, disabled: true });
    expect(refused.status).toBe(403);
    expect(refused.body).toEqual({ detail: 'Only runtime administrators may update users' });
    expect((await me(clerk)).status).toBe(200);
    const unknown = await request(t.app)
      .put('/users')
      .set(admin)
      .send({ username: 'cred-nobody', password: '' });
    expect(unknown.status).toBe(404);
    expect(unknown.body).toEqual({ detail: "No user named 'cred-nobody'" });
    const nameless = await request(t.app)
      .put('/users')
      .set(admin)
      .send({ password: 'Ym3-estuary-russet-90-tern' });
    expect(nameless.status).toBe(422);
    expect(nameless.body.detail).toContain('username');
    expect((await request(t.app).put('/users').send({ username: CLERK.username })).status).toBe(401);
  });
});

describe('POST /users/me:changePassword', () => {
  const change = (auth: Record<string, string>, body: object) =>
    request(t.app).post('/users/me:changePassword').set(auth).send(body);

  it("changes the caller's password given the current one, and ends every earlier token, its own included", async () => {
    const first = await newUser('cred-erin', 'Qa7-fjord-tamarack-45-rail');
    const second = bearer(await passwordToken(t.app, 'cred-erin', 'Qa7-fjord-tamarack-45-rail'));
    const res = await change(first, {
      current_password: 'Qa7-fjord-tamarack-45-rail',
      new_password: 'Bu2-sedge-marigold-88-coot',
    });
    expect(res.status, res.text).toBe(204);
    expect(res.text).toBe('');
    for (const stale of [first, second]) expect((await me(stale)).body).toEqual({ detail: INVALIDATED });
    const old = await loginAs('cred-erin', 'Qa7-fjord-tamarack-45-rail');
    expect(old.body).toEqual({ detail: 'Incorrect username or password' });
    const fresh = bearer(await passwordToken(t.app, 'cred-erin', 'Bu2-sedge-marigold-88-coot'));
    expect((await me(fresh)).body).toMatchObject({ username: 'cred-erin' });
  });

  it('refuses a wrong current password (403), counting it as a failed login, and changes nothing', async () => {
    const token = await newUser('cred-finn', 'Ze9-mangrove-ochre-17-stilt');
    const saved = loginLimits.failuresPerAccountAndAddress;
    loginLimits.failuresPerAccountAndAddress = 2;
    try {
      for (let i = 0; i < 2; i++) {
        const wrong = await change(token, {
          current_password: `guess ${i}`,
          new_password: 'Bu2-sedge-marigold-88-coot',
        });
        expect(wrong.status).toBe(403);
        expect(wrong.body).toEqual({ detail: 'current_password is not the password of this account' });
      }
      const held = await change(token, {
        current_password: 'Ze9-mangrove-ochre-17-stilt',
        new_password: 'Bu2-sedge-marigold-88-coot',
      });
      expect(held.status).toBe(429);
      expect(held.body).toEqual({ detail: TOO_MANY_FOR_ACCOUNT_AND_ADDRESS });
      // The same count holds back /token for this account at this address.
      const viaToken = await loginAs('cred-finn', 'Ze9-mangrove-ochre-17-stilt');
      expect(viaToken.status).toBe(429);
    } finally {
      loginLimits.failuresPerAccountAndAddress = saved;
    }
    expect((await me(token)).status).toBe(200);
  });

  it('applies the password rules to the new password (422 naming the rule)', async () => {
    const token = await newUser('cred-gale', 'Mr4-tidepool-juniper-66-knot');
    const weak = await change(token, {
      current_password: 'Mr4-tidepool-juniper-66-knot',
      new_password: 'aaaaaaaaaaaaaaaa',
    });
    expect(weak.status).toBe(422);
    expect(weak.body.detail).toContain('too easy to guess');
    const short = await change(token, {
      current_password: 'Mr4-tidepool-juniper-66-knot',
      new_password: 'short',
    });
    expect(short.status).toBe(422);
    expect(short.body.detail).toContain('new_password');
    const missing = await change(token, { new_password: 'Bu2-sedge-marigold-88-coot' });
    expect(missing.status).toBe(422);
    expect(missing.body.detail).toContain('current_password');
    expect((await me(token)).status).toBe(200);
  });

  it('is for users: a site client gets 403', async () => {
    const { client } = await newSiteClient(t.app, clerk, 'cred-lab-0');
    const res = await change(client, {
      current_password: 'anything at all',
      new_password: 'Bu2-sedge-marigold-88-coot',
    });
    expect(res.status).toBe(403);
    expect(res.body).toEqual({ detail: 'This operation needs a user login, not a site client' });
  });
});

describe('PATCH /admin/site_clients/{site_client_id}', () => {
  let holder: Record<string, string>;
  beforeAll(async () => {
    holder = await newUser('cred-keeper', 'Lx8-bramble-indigo-36-swift');
    const granted = await request(t.app)
      .post('/admin/allowances')
      .set(admin)
      .send({ username: 'cred-keeper', action: '/admin/site_clients' });
    expect(granted.status, granted.text).toBe(201);
  });

  it("gives a client a new secret: the old secret and the client's earlier tokens stop working", async () => {
    const { clientId, client } = await newSiteClient(t.app, clerk, 'cred-lab-1');
    expect((await request(t.app).get('/sites').set(client)).status).toBe(200);

    const res = await request(t.app)
      .patch(`/admin/site_clients/${clientId}`)
      .set(holder)
      .send({ secret: 'my_new_secret!' });
    expect(res.status, res.text).toBe(200);
    expect(res.text).toBe(`Site client '${clientId}' has been updated.`);

    const stale = await request(t.app).get('/sites').set(client);
    expect(stale.status).toBe(401);
    expect(stale.body).toEqual({ detail: INVALIDATED });
    const renewed = await login({
      grant_type: 'client_credentials',
      client_id: clientId,
      client_secret: 'my_new_secret!',
    });
    expect(renewed.status, renewed.text).toBe(200);
    const sites = await request(t.app).get('/sites').set(bearer(renewed.body.access_token));
    expect(sites.body.resources).toEqual([{ id: 'cred-lab-1', capability_ids: [] }]);
  });

  it('answers as the original: 204 without a secret, 404 for an unknown client, 422 for a short secret or another member', async () => {
    const { clientId, client } = await newSiteClient(t.app, clerk, 'cred-lab-2');
    const noop = await request(t.app).patch(`/admin/site_clients/${clientId}`).set(holder).send({});
    expect(noop.status).toBe(204);
    expect(noop.text).toBe('');
    const unknown = await request(t.app)
      .patch('/admin/site_clients/sys0nosuchclient')
      .set(holder)
      .send({ secret: 'my_new_secret!' });
    expect(unknown.status).toBe(404);
    expect(unknown.body).toEqual({ detail: "No site client with id 'sys0nosuchclient'" });
    const short = await request(t.app)
      .patch(`/admin/site_clients/${clientId}`)
      .set(holder)
      .send({ secret: '2short' });
    expect(short.status).toBe(422);
    expect(short.body.detail).toContain('secret');
    const extra = await request(t.app)
      .patch(`/admin/site_clients/${clientId}`)
      .set(holder)
      .send({ secret: 'my_new_secret!', site_id: 'elsewhere' });
    expect(extra.status).toBe(422);
    expect(extra.body.detail).toContain('site_id');
    // Nothing above changed the client.
    expect((await request(t.app).get('/sites').set(client)).status).toBe(200);
  });

  it('is refused (403) without the allowance, even to the administrator of the site', async () => {
    const { clientId, client } = await newSiteClient(t.app, clerk, 'cred-lab-3');
    const res = await request(t.app)
      .patch(`/admin/site_clients/${clientId}`)
      .set(clerk)
      .send({ secret: 'my_new_secret!' });
    expect(res.status).toBe(403);
    expect(res.body).toEqual({ detail: 'You are not allowed to update site clients.' });
    expect((await request(t.app).get('/sites').set(client)).status).toBe(200);
  });
});

describe('DELETE /admin/site_clients/{site_client_id}', () => {
  it("revokes a client for its site's administrator: its secret and tokens stop working, the site's other clients do not", async () => {
    const { clientId, client } = await newSiteClient(t.app, clerk, 'cred-lab-4');
    const other = await request(t.app).post('/sites/cred-lab-4:generateCredentials').set(clerk);
    const otherLogin = await login({ grant_type: 'client_credentials', ...other.body });
    expect(otherLogin.status).toBe(200);

    const res = await request(t.app).delete(`/admin/site_clients/${clientId}`).set(clerk);
    expect(res.status, res.text).toBe(204);
    const stale = await request(t.app).get('/sites').set(client);
    expect(stale.status).toBe(401);
    expect(stale.body).toEqual({ detail: INVALIDATED });
    const again = await request(t.app).delete(`/admin/site_clients/${clientId}`).set(admin);
    expect(again.status).toBe(404);
    expect(again.body).toEqual({ detail: `No site client with id '${clientId}'` });
    const sites = await request(t.app).get('/sites').set(bearer(otherLogin.body.access_token));
    expect(sites.body.resources).toEqual([{ id: 'cred-lab-4', capability_ids: [] }]);
  });

  it("refuses (403) a user who does not administer the client's site, and a site client", async () => {
    const { clientId, client } = await newSiteClient(t.app, clerk, 'cred-lab-5');
    const outsider = await newUser('cred-outsider', 'Jf5-cascade-saffron-72-dipper');
    for (const auth of [outsider, client]) {
      const res = await request(t.app).delete(`/admin/site_clients/${clientId}`).set(auth);
      expect(res.status).toBe(403);
      expect(res.body.detail).toContain('Only administrators of the site');
    }
    // Unknown clients answer alike, so ids cannot be probed.
    const unknown = await request(t.app).delete('/admin/site_clients/sys0nosuchclient').set(outsider);
    expect(unknown.status).toBe(403);
    expect((await request(t.app).get('/sites').set(client)).status).toBe(200);
  });
});

describe('hostile input to the credential endpoints', () => {
  it('answers 4xx with a detail for malformed, mistyped, oversized and odd input, and changes nothing', async () => {
    const sends: Array<[string, string, string | object]> = [
      ['put', '/users', '{"username": "cred-clerk", "password": '],
      ['put', '/users', '[]'],
      ['put', '/users', { username: ['cred-clerk'] }],
      ['put', '/users', { username: CLERK.username, disabled: 'yes' }],
      ['put', '/users', { username: CLERK.username, password: 'x'.repeat(100_000) }],
      ['put', '/users', { username: 'u'.repeat(200_000), password: '' }],
      [
        'post',
        '/users/me:changePassword',
        { current_password: 'c'.repeat(50_000), new_password: 'n'.repeat(12) },
      ],
      ['post', '/users/me:changePassword', '{"current_password": {"$ne": null}}'],
      ['patch', `/admin/site_clients/${'%2F..%2F'.repeat(500)}`, { secret: 'my_new_secret!' }],
      ['patch', '/admin/site_clients/x', { secret: 's'.repeat(10_000) }],
      ['delete', `/admin/site_clients/${encodeURIComponent('(a+)+$'.repeat(1000))}`, {}],
    ];
    for (const [method, path, body] of sends) {
      const req = request(t.app)[method as 'put'](path).set(clerk).set('Content-Type', 'application/json');
      const res = await req.send(typeof body === 'string' ? body : JSON.stringify(body));
      const seen = `${method} ${path.slice(0, 40)}: ${res.status} ${res.text.slice(0, 200)}`;
      expect(res.status, seen).toBeGreaterThanOrEqual(400);
      expect(res.status, seen).toBeLessThan(500);
      expect(typeof res.body.detail, seen).toBe('string');
    }
    expect((await me(clerk)).body).toMatchObject({ username: CLERK.username, disabled: false });
    expect((await loginAs(CLERK.username, CLERK.password)).status).toBe(200);
  });
});
