import crypto from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeJwt } from 'jose';
import { setBcryptCost } from '../../src/accounts/index.ts';
import { getJson, passwordToken, postJson, startAuthServer, type AuthServer } from './auth-server.ts';
import { Browser, redeemDocsClientCode } from './browser.ts';

setBcryptCost(4);

describe('docs client sign-in without an external issuer', () => {
  let server: AuthServer;
  beforeAll(async () => {
    server = await startAuthServer({ ADMIN_USERNAME: 'root', ADMIN_PASSWORD: 'root-password-1' });
  });
  afterAll(async () => server.close());

  async function startAuthorization(browser: Browser) {
    const verifier = crypto.randomBytes(32).toString('base64url');
    const challenge = crypto.createHash('sha256').update(verifier).digest('base64url');
    const redirectUri = `${server.url}/docs/oauth2-redirect.html`;
    const authorize = new URL(`${server.url}/oidc/auth`);
    authorize.search = new URLSearchParams({
      client_id: 'swagger-ui',
      response_type: 'code',
      redirect_uri: redirectUri,
      scope: 'openid profile api',
      state: 's1',
      code_challenge: challenge,
      code_challenge_method: 'S256',
    }).toString();
    const { response, url } = await browser.follow(authorize.href);
    return { response, url, verifier, redirectUri };
  }

  /** Signs `username` in on the docs page in `browser`; answers the docs page's access token. */
  async function signIn(browser: Browser, username: string, password: string): Promise<string> {
    const { response, url, verifier, redirectUri } = await startAuthorization(browser);
    expect(url).toMatch(new RegExp(`^${server.url}/oidc/interaction/`));
    const action = /action="([^"]+)"/.exec(await response.text())![1]!;
    const posted = await browser.request(new URL(action, server.url).href, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ username, password }).toString(),
    });
    expect(posted.status).toBe(303);
    const { url: back } = await browser.follow(
      new URL(posted.headers.get('location')!, server.url).href,
      redirectUri,
    );
    const code = new URL(back).searchParams.get('code')!;
    const tokens = await redeemDocsClientCode(server.url, code, redirectUri, verifier);
    return ((await tokens.json()) as { access_token: string }).access_token;
  }

  it('shows a username/password form and, after sign-in, gives the docs page a working token', async () => {
    const accessToken = await signIn(new Browser(), 'root', 'root-password-1');
    expect(decodeJwt(accessToken)).toMatchObject({ sub: 'root', aud: `${server.url}/api` });
    expect((await getJson(`${server.url}/users/me`, accessToken)).body).toMatchObject({ username: 'root' });
  });

  it("ends the docs page's sign-in and token when the password changes: the next sign-in asks for the password", async () => {
    const admin = await passwordToken(server.url, 'root', 'root-password-1');
    const user = { username: 'docs-reader', password: 'Gz6-willow-harbor-28-plover' };
    expect((await postJson(`${server.url}/users`, user, admin)).status).toBe(201);
    const browser = new Browser();
    const token = await signIn(browser, user.username, user.password);
    expect((await getJson(`${server.url}/users/me`, token)).status).toBe(200);
    // While the sign-in lasts, the docs page gets a code again without a form.
    const { url: silent } = await startAuthorization(browser);
    expect(silent).toMatch(new RegExp(`^${server.url}/docs/oauth2-redirect.html\\?code=`));

    const changed = await fetch(`${server.url}/users`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${admin}` },
      body: JSON.stringify({ username: user.username, password: 'Xe4-sparrow-granite-61-kelp' }),
    });
    expect(changed.status).toBe(200);

    expect((await getJson(`${server.url}/users/me`, token)).body).toEqual({
      detail: 'Access token has been invalidated. Please log in again.',
    });
    const { url, response } = await startAuthorization(browser);
    expect(url).toMatch(new RegExp(`^${server.url}/oidc/interaction/`));
    expect(await response.text()).toContain('name="password"');
    const renewed = await signIn(browser, user.username, 'Xe4-sparrow-granite-61-kelp');
    expect((await getJson(`${server.url}/users/me`, renewed)).body).toMatchObject({
      username: 'docs-reader',
    });
  });

  it('shows the form again with an error for a wrong password', async () => {
    const browser = new Browser();
    const { response } = await startAuthorization(browser);
    const action = /action="([^"]+)"/.exec(await response.text())![1]!;
    const posted = await browser.request(new URL(action, server.url).href, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'username=root&password=wrong',
    });
    expect(posted.status).toBe(401);
    const html = await posted.text();
    expect(html).toContain('Incorrect username or password');
    expect(html).not.toContain('wrong');
  });

  it('shows an error page for an unknown or expired interaction', async () => {
    const response = await fetch(`${server.url}/oidc/interaction/not-a-real-interaction`);
    expect(response.status).toBe(400);
    expect(await response.text()).toContain('This sign-in is unknown or expired');
  });

  it('answers 404 on /login/external when no external issuer is configured', async () => {
    const response = await fetch(`${server.url}/login/external`);
    expect(response.status).toBe(404);
    expect(await response.text()).toContain('External sign-in is not configured');
  });
});
