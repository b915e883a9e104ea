import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SignJWT, decodeJwt, exportJWK, generateKeyPair } from 'jose';
import { setBcryptCost } from '../../src/accounts/index.ts';
import { freePort, getJson, postToken, startAuthServer, type AuthServer } from './auth-server.ts';
import {
  externalIdToken,
  pkcePair,
  EXTERNAL_CLIENT_ID,
  EXTERNAL_CLIENT_SECRET,
  RESEARCHER_ORCID,
  startExternalIssuer,
  type ExternalIssuer,
} from './external-issuer.ts';
import { Browser, redeemDocsClientCode } from './browser.ts';

setBcryptCost(4);

function tokenFromPage(html: string): string {
  const match = /<textarea id="token"[^>]*>([^<]+)<\/textarea>/.exec(html);
  if (!match) throw new Error(`no token on the page: ${html.slice(0, 300)}`);
  return match[1]!;
}

describe('external researcher sign-in', () => {
  let service: AuthServer;
  let issuer: ExternalIssuer;

  beforeAll(async () => {
    const port = await freePort();
    issuer = await startExternalIssuer(`http://127.0.0.1:${port}`);
    service = await startAuthServer(
      {
        EXTERNAL_OIDC_ISSUER: issuer.url,
        EXTERNAL_OIDC_CLIENT_ID: EXTERNAL_CLIENT_ID,
        EXTERNAL_OIDC_CLIENT_SECRET: EXTERNAL_CLIENT_SECRET,
      },
      { port },
    );
  });
  afterAll(async () => {
    await service.close();
    await issuer.close();
  });

  it('signs a researcher in through the external issuer and shows a token that works on /users/me', async () => {
    issuer.signInAs(RESEARCHER_ORCID);
    const browser = new Browser();
    const { response, visited } = await browser.follow(`${service.url}/login/external`);
    expect(visited.some((u) => u.startsWith(`${issuer.url}/auth`))).toBe(true);
    expect(visited.at(-1)).toMatch(new RegExp(`^${service.url}/login/external/callback\\?`));
    expect(response.status).toBe(200);
    expect(response.headers.get('cache-control')).toBe('no-store');
    const html = await response.text();
    expect(html).toContain(`Signed in as ${RESEARCHER_ORCID}`);
    expect(html).toContain('id="copy"');
    const token = tokenFromPage(html);
    expect(html).toContain(`curl -H &#34;Authorization: Bearer ${token}&#34; ${service.url}/users/me`);

    const me = await getJson(`${service.url}/users/me`, token);
    expect(me.status).toBe(200);
    expect(me.body).toEqual({ username: RESEARCHER_ORCID, site_admin: [], disabled: false });
  });

  it('maps a returning researcher to the same user instead of creating another', async () => {
    const subject = '0000-0001-5109-3700';
    issuer.signInAs(subject);
    const first = tokenFromPage(
      await (await new Browser().follow(`${service.url}/login/external`)).response.text(),
    );
    await service.store.upsertMany('users', [
      { ...(await service.store.getById('users', subject))!, site_admin: ['a-site-of-hers'] },
    ]);
    const second = tokenFromPage(
      await (await new Browser().follow(`${service.url}/login/external`)).response.text(),
    );
    expect(decodeJwt(first).sub).toBe(subject);
    expect((await getJson(`${service.url}/users/me`, second)).body.site_admin).toEqual(['a-site-of-hers']);
    expect(await service.store.count('users', { username: subject })).toBe(1);
  });

  it('refuses a callback whose state does not belong to this browser', async () => {
    const browser = new Browser();
    const start = await browser.request(`${service.url}/login/external`);
    const authorizeUrl = start.headers.get('location')!;
    const state = new URL(authorizeUrl).searchParams.get('state')!;
    const stranger = new Browser();
    const answer = await stranger.request(
      `${service.url}/login/external/callback?code=stolen&state=${state}`,
    );
    expect(answer.status).toBe(400);
    expect(await answer.text()).toContain('This sign-in is unknown or expired');
  });

  it('lets the docs page (client swagger-ui, code + PKCE) end up with a service token via the external sign-in', async () => {
    issuer.signInAs(RESEARCHER_ORCID);
    const browser = new Browser();
    const { verifier, challenge } = pkcePair();
    const redirectUri = `${service.url}/docs/oauth2-redirect.html`;
    const authorize = new URL(`${service.url}/oidc/auth`);
    authorize.search = new URLSearchParams({
      client_id: 'swagger-ui',
      response_type: 'code',
      redirect_uri: redirectUri,
      scope: 'openid',
      state: 'docs-state',
      code_challenge: challenge,
      code_challenge_method: 'S256',
    }).toString();
    const { url, visited } = await browser.follow(authorize.href, redirectUri);
    expect(visited.some((u) => u.startsWith(`${service.url}/login/external?interaction=`))).toBe(true);
    expect(visited.some((u) => u.startsWith(`${issuer.url}/auth`))).toBe(true);
    const back = new URL(url);
    expect(back.searchParams.get('state')).toBe('docs-state');
    const code = back.searchParams.get('code')!;

    const tokenResponse = await redeemDocsClientCode(service.url, code, redirectUri, verifier);
    const tokens = (await tokenResponse.json()) as { access_token: string; token_type: string };
    expect(tokenResponse.status).toBe(200);
    const claims = decodeJwt(tokens.access_token);
    expect(claims).toMatchObject({
      sub: RESEARCHER_ORCID,
      iss: service.url,
      aud: `${service.url}/api`,
      client_id: 'swagger-ui',
    });
    const me = await getJson(`${service.url}/users/me`, tokens.access_token);
    expect(me.status).toBe(200);
    expect(me.body.username).toBe(RESEARCHER_ORCID);
  });

  it('exchanges an external id_token sent as client_id with an empty secret for a service token', async () => {
    issuer.signInAs('0000-0003-1419-2405');
    const idToken = await externalIdToken(issuer);
    const exchanged = await postToken(service.url, {
      grant_type: 'client_credentials',
      client_id: idToken,
      client_secret: '',
    });
    expect(exchanged.status).toBe(200);
    expect(exchanged.body).toMatchObject({
      token_type: 'bearer',
      expires: { days: 1, hours: 0, minutes: 0 },
    });
    const me = await getJson(`${service.url}/users/me`, exchanged.body.access_token as string);
    expect(me.body).toMatchObject({ username: '0000-0003-1419-2405', site_admin: [] });
  });

  it('refuses an id_token that another issuer signed, or one whose signature was altered', async () => {
    const { privateKey, publicKey } = await generateKeyPair('RS256');
    const forged = await new SignJWT({ sub: '0000-0000-0000-0001' })
      .setProtectedHeader({ alg: 'RS256', kid: (await exportJWK(publicKey)).kid ?? 'forged' })
      .setIssuer(issuer.url)
      .setAudience(EXTERNAL_CLIENT_ID)
      .setIssuedAt()
      .setExpirationTime('5m')
      .sign(privateKey);
    const forgedAnswer = await postToken(service.url, {
      grant_type: 'client_credentials',
      client_id: forged,
      client_secret: '',
    });
    expect(forgedAnswer.status).toBe(401);
    expect(forgedAnswer.body).toEqual({ detail: 'Incorrect client_id or client_secret' });

    const genuine = await externalIdToken(issuer);
    const [header, payload] = genuine.split('.');
    const altered = `${header}.${payload}.${Buffer.from('not the signature').toString('base64url')}`;
    const alteredAnswer = await postToken(service.url, {
      grant_type: 'client_credentials',
      client_id: altered,
      client_secret: '',
    });
    expect(alteredAnswer.status).toBe(401);
    expect(alteredAnswer.headers.get('www-authenticate')).toBe('Bearer');
    expect(await service.store.getById('users', '0000-0000-0000-0001')).toBeNull();
  });
});
