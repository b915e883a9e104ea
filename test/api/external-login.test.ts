/**
 * External researcher sign-in through the whole app listening on 127.0.0.1, with a second
 * OpenID Connect provider on loopback as the external issuer.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { setBcryptCost } from '../../src/accounts/index.ts';
import { startTestServer, type TestServer } from '../support/server.ts';
import { freePort } from '../auth/auth-server.ts';
import { Browser } from '../auth/browser.ts';
import {
  externalIdToken,
  EXTERNAL_CLIENT_ID,
  EXTERNAL_CLIENT_SECRET,
  RESEARCHER_ORCID,
  startExternalIssuer,
  type ExternalIssuer,
} from '../auth/external-issuer.ts';

setBcryptCost(4);

describe('GET /login/external in the app', () => {
  let service: TestServer;
  let issuer: ExternalIssuer;

  beforeAll(async () => {
    // The issuer's address must be configured before the app starts; its discovery happens on first use.
    const issuerPort = await freePort();
    service = await startTestServer({
      EXTERNAL_OIDC_ISSUER: `http://127.0.0.1:${issuerPort}`,
      EXTERNAL_OIDC_CLIENT_ID: EXTERNAL_CLIENT_ID,
      EXTERNAL_OIDC_CLIENT_SECRET: EXTERNAL_CLIENT_SECRET,
    });
    issuer = await startExternalIssuer(service.url, issuerPort);
  });
  afterAll(async () => {
    await service?.close();
    await issuer?.close();
  });

  it('ends on a page with a copyable token and a curl example, and the token works on /users/me', async () => {
    const browser = new Browser();
    const { response, visited } = await browser.follow(`${service.url}/login/external`);
    expect(visited[1]).toMatch(new RegExp(`^${issuer.url}/auth\\?`));
    expect(response.status).toBe(200);
    const html = await response.text();
    const token = /<textarea id="token"[^>]*>([^<]+)<\/textarea>/.exec(html)![1]!;
    expect(html).toContain('>Copy</button>');
    expect(html).toContain(`${service.url}/users/me`);

    const me = await fetch(`${service.url}/users/me`, { headers: { authorization: `Bearer ${token}` } });
    expect(me.status).toBe(200);
    expect(await me.json()).toEqual({ username: RESEARCHER_ORCID, site_admin: [], disabled: false });
  });

  it('exchanges an external id_token sent as client_id at /token, and refuses one the issuer did not sign', async () => {
    const exchange = (idToken: string) =>
      fetch(`${service.url}/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({
          grant_type: 'client_credentials',
          client_id: idToken,
          client_secret: '',
        }).toString(),
      });
    issuer.signInAs('0000-0002-9079-593X');
    const accepted = await exchange(await externalIdToken(issuer));
    expect(accepted.status).toBe(200);
    const body = (await accepted.json()) as { access_token: string; token_type: string; expires: unknown };
    expect(body).toMatchObject({ token_type: 'bearer', expires: { days: 1, hours: 0, minutes: 0 } });
    const me = await fetch(`${service.url}/users/me`, {
      headers: { authorization: `Bearer ${body.access_token}` },
    });
    expect(await me.json()).toMatchObject({ username: '0000-0002-9079-593X' });

    const refused = await exchange('eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiIwMDAwIn0.c2lnbmF0dXJl');
    expect(refused.status).toBe(401);
    expect(refused.headers.get('www-authenticate')).toBe('Bearer');
    expect(await refused.json()).toEqual({ detail: 'Incorrect client_id or client_secret' });
  });
});
