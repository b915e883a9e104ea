/**
 * The token endpoint the discovery document advertises takes what `POST /token` takes, so an
 * OAuth client configured from discovery logs in with a password or a site client's credentials,
 * and answers as OAuth 2.0 does; the provider's own grants (the docs page's codes) still reach it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import request from 'supertest';
import { setBcryptCost } from '../../src/accounts/index.ts';
import { createTestApp, passwordToken, type TestApp } from '../support/server.ts';

setBcryptCost(4);
const ADMIN = { username: 'disco-admin', password: 'harbour lantern quartz fennel' };

let t: TestApp;
let tokenEndpoint: string;
let credentials: { client_id: string; client_secret: string };

beforeAll(async () => {
  t = await createTestApp({ ADMIN_USERNAME: ADMIN.username, ADMIN_PASSWORD: ADMIN.password });
  const admin = { Authorization: `Bearer ${await passwordToken(t.app, ADMIN.username, ADMIN.password)}` };
  expect((await request(t.app).post('/sites').set(admin).send({ id: 'disco-lab' })).status).toBe(201);
  credentials = (await request(t.app).post('/sites/disco-lab:generateCredentials').set(admin).expect(200))
    .body;
  const discovery = await request(t.app).get('/.well-known/openid-configuration').expect(200);
  tokenEndpoint = new URL(discovery.body.token_endpoint).pathname;
});
afterAll(async () => t?.close());

describe('the discovery document', () => {
  it('advertises the token endpoint with the grants it takes', async () => {
    const res = await request(t.app).get('/.well-known/openid-configuration').expect(200);
    expect(res.body.issuer).toBe(t.config.publicUrl);
    expect(res.body.token_endpoint).toBe(`${t.config.publicUrl}/oidc/token`);
    expect(res.body.grant_types_supported).toEqual(
      expect.arrayContaining(['authorization_code', 'password', 'client_credentials']),
    );
  });
});

describe('its token endpoint', () => {
  it("logs a site client in with its credentials in the form, as POST /token does, answering OAuth's shape", async () => {
    const res = await request(t.app)
      .post(tokenEndpoint)
      .type('form')
      .send({ grant_type: 'client_credentials', ...credentials })
      .expect(200);
    expect(res.headers['cache-control']).toBe('no-store');
    expect(Object.keys(res.body).sort()).toEqual(['access_token', 'expires_in', 'token_type']);
    expect(res.body).toMatchObject({ token_type: 'Bearer', expires_in: 86400 });
    // A site client's token: the site client operations take it.
    const jobs = await request(t.app).get('/jobs').set('Authorization', `Bearer ${res.body.access_token}`);
    expect(jobs.status, jobs.text).toBe(200);
    expect(jobs.body).toEqual({ resources: [] });
  });

  it('takes the site client credentials in a Basic header too', async () => {
    const res = await request(t.app)
      .post(tokenEndpoint)
      .auth(credentials.client_id, credentials.client_secret)
      .type('form')
      .send({ grant_type: 'client_credentials' })
      .expect(200);
    expect(res.body.token_type).toBe('Bearer');
  });

  it('logs a user in with a password', async () => {
    const res = await request(t.app)
      .post(tokenEndpoint)
      .type('form')
      .send({ grant_type: 'password', ...ADMIN })
      .expect(200);
    const me = await request(t.app).get('/users/me').set('Authorization', `Bearer ${res.body.access_token}`);
    expect(me.body).toMatchObject({ username: ADMIN.username });
  });

  it('refuses wrong credentials as OAuth 2.0 errors', async () => {
    const client = await request(t.app)
      .post(tokenEndpoint)
      .type('form')
      .send({ grant_type: 'client_credentials', client_id: credentials.client_id, client_secret: 'wrong' })
      .expect(401);
    expect(client.body).toEqual({
      error: 'invalid_client',
      error_description: 'Incorrect client_id or client_secret',
    });
    const user = await request(t.app)
      .post(tokenEndpoint)
      .type('form')
      .send({ grant_type: 'password', username: ADMIN.username, password: 'not it at all' })
      .expect(400);
    expect(user.body).toEqual({
      error: 'invalid_grant',
      error_description: 'Incorrect username or password',
    });
  });

  it("passes the provider's own grants on to it", async () => {
    const res = await request(t.app)
      .post(tokenEndpoint)
      .type('form')
      .send({
        grant_type: 'authorization_code',
        code: 'not-a-code',
        client_id: 'swagger-ui',
        code_verifier: 'x'.repeat(43),
        redirect_uri: `${t.config.publicUrl}/docs/oauth2-redirect.html`,
      })
      .expect(400);
    expect(res.body).toMatchObject({ error: 'invalid_grant' });
    const unknown = await request(t.app)
      .post(tokenEndpoint)
      .type('form')
      .send({ grant_type: 'implicit' })
      .expect(400);
    // The provider's answer: a grant without a client of its own is an invalid request.
    expect(unknown.body).toMatchObject({ error: 'invalid_request', error_description: expect.any(String) });
  });
});
