/**
 * nmdc_api_utilities (the NMDC Python client), auth.py: `NMDCAuth.get_token` posts a form to
 * /token with the password grant or the client-credentials grant, parses the answer as JSON
 * whatever its status, keeps `access_token` and caches it for `expires` (days, hours, minutes) less
 * a minute. A missing `access_token` makes it raise.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Accounts } from '../../src/accounts/index.ts';
import { SITE_ID, USER, startCompatServer, type CompatServer } from './support/server.ts';
import { send } from './support/wire.ts';
import { requestsForm } from './support/python.ts';
import { READ_HEADERS, TOKEN_HEADERS } from './support/nmdc-api-utilities-client.ts';

let server: CompatServer;

/** A user whose password needs form encoding: space, `+`, `/`, `&` and `=`. */
const ALICE = { username: 'alice', password: 'correct horse+/ &=battery' };

beforeAll(async () => {
  server = await startCompatServer();
  await new Accounts(server.store).createUser(ALICE);
});
afterAll(async () => server?.close());

const postToken = (form: Array<[string, string]>) =>
  send(server.url, { method: 'POST', target: '/token', headers: TOKEN_HEADERS, body: requestsForm(form) });

/** The lifetime the service gives tokens, as `{days, hours, minutes}`. */
function configuredExpiry() {
  const minutes = Math.floor(server.config.tokenTtlSeconds / 60);
  return {
    days: Math.floor(minutes / 1440),
    hours: Math.floor((minutes % 1440) / 60),
    minutes: minutes % 60,
  };
}

/** What the client keeps from a token answer: a string token and a lifetime longer than its one-minute margin. */
function expectUsableTokenAnswer(res: Awaited<ReturnType<typeof postToken>>): string {
  expect(res.status, res.text).toBe(200);
  expect(res.headers['content-type']).toMatch(/^application\/json/);
  expect(res.json).toEqual({
    access_token: expect.any(String),
    token_type: 'bearer',
    expires: configuredExpiry(),
  });
  const { days, hours, minutes } = res.json.expires;
  expect(((days * 24 + hours) * 60 + minutes) * 60).toBeGreaterThan(60);
  return res.json.access_token;
}

describe('auth.py', () => {
  it('NMDCAuth.get_token with username and password: POST /token grant_type=password', async () => {
    const body = requestsForm([
      ['grant_type', 'password'],
      ['username', USER.username],
      ['password', USER.password],
    ]);
    expect(body).toBe('grant_type=password&username=compat-researcher&password=compat-researcher-password-1');
    const token = expectUsableTokenAnswer(
      await postToken([
        ['grant_type', 'password'],
        ['username', USER.username],
        ['password', USER.password],
      ]),
    );
    // The token the client caches is that user's bearer token.
    const me = await send(server.url, {
      method: 'GET',
      target: '/users/me',
      headers: { ...READ_HEADERS, Authorization: `Bearer ${token}` },
    });
    expect(me.status, me.text).toBe(200);
    expect(me.json.username).toBe(USER.username);
  });

  it('NMDCAuth.get_token with a password that needs form encoding (space, +, /, &, =)', async () => {
    const form: Array<[string, string]> = [
      ['grant_type', 'password'],
      ['username', ALICE.username],
      ['password', ALICE.password],
    ];
    expect(requestsForm(form)).toBe(
      'grant_type=password&username=alice&password=correct+horse%2B%2F+%26%3Dbattery',
    );
    const token = expectUsableTokenAnswer(await postToken(form));
    const me = await send(server.url, {
      method: 'GET',
      target: '/users/me',
      headers: { ...READ_HEADERS, Authorization: `Bearer ${token}` },
    });
    expect(me.json.username).toBe(ALICE.username);
  });

  it('NMDCAuth.get_token with client_id and client_secret: POST /token grant_type=client_credentials', async () => {
    const token = expectUsableTokenAnswer(
      await postToken([
        ['grant_type', 'client_credentials'],
        ['client_id', server.siteClient.client_id],
        ['client_secret', server.siteClient.client_secret],
      ]),
    );
    // The token the client caches acts for the site client: it sees its own site.
    const sites = await send(server.url, {
      method: 'GET',
      target: '/sites',
      headers: { ...READ_HEADERS, Authorization: `Bearer ${token}` },
    });
    expect(sites.status, sites.text).toBe(200);
    expect(sites.json.resources.map((s: { id: string }) => s.id)).toEqual([SITE_ID]);
  });

  it('NMDCAuth.get_token with a wrong password: a JSON 401 without access_token, which the client raises on', async () => {
    const res = await postToken([
      ['grant_type', 'password'],
      ['username', USER.username],
      ['password', `${USER.password}-wrong`],
    ]);
    expect(res.status).toBe(401);
    expect(res.headers['www-authenticate']).toBe('Bearer');
    expect(res.json).toEqual({ detail: 'Incorrect username or password' });
  });

  it('NMDCAuth.get_token with a wrong client secret: a JSON 401 without access_token', async () => {
    const res = await postToken([
      ['grant_type', 'client_credentials'],
      ['client_id', server.siteClient.client_id],
      ['client_secret', 's3cr3t+/ &='],
    ]);
    expect(res.status).toBe(401);
    expect(res.headers['www-authenticate']).toBe('Bearer');
    expect(res.json).toEqual({ detail: 'Incorrect client_id or client_secret' });
  });
});
