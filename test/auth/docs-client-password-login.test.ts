import crypto from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeJwt } from 'jose';
import { setBcryptCost } from '../../src/accounts/index.ts';
import { getJson, startAuthServer, type AuthServer } from './auth-server.ts';
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

  it('shows a username/password form and, after sign-in, gives the docs page a working token', async () => {
    const browser = new Browser();
    const { response, url, verifier, redirectUri } = await startAuthorization(browser);
    expect(url).toMatch(new RegExp(`^${server.url}/oidc/interaction/`));
    const html = await response.text();
    const action = /action="([^"]+)"/.exec(html)![1]!;
    const posted = await browser.request(new URL(action, server.url).href, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'username=root&password=root-password-1',
    });
    expect(posted.status).toBe(303);
    const { url: back } = await browser.follow(
      new URL(posted.headers.get('location')!, server.url).href,
      redirectUri,
    );
    const code = new URL(back).searchParams.get('code')!;
    const tokenResponse = await redeemDocsClientCode(server.url, code, redirectUri, verifier);
    const tokenBody = (await tokenResponse.json()) as { access_token: string };
    const { access_token } = tokenBody;
    expect(decodeJwt(access_token)).toMatchObject({ sub: 'root', aud: `${server.url}/api` });
    expect((await getJson(`${server.url}/users/me`, access_token)).body).toMatchObject({ username: 'root' });
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
