/**
 * A second OpenID Connect provider on 127.0.0.1 standing in for the external researcher
 * identity issuer (ORCID): it signs every browser in as a fixed researcher without a form.
 */
import { createServer, type Server } from 'node:http';
import Provider from 'oidc-provider';
import { exportJWK, generateKeyPair } from 'jose';
import crypto from 'node:crypto';
import { freePort } from './auth-server.ts';
import { Browser } from './browser.ts';

export const RESEARCHER_ORCID = '0000-0002-1825-0097';
export const EXTERNAL_CLIENT_ID = 'nmdc-metadata-service';
export const EXTERNAL_CLIENT_SECRET = 'external-client-secret-for-tests';
/** A redirect URI the tests use to obtain id_tokens directly (never actually served). */
export const CAPTURE_REDIRECT = 'http://127.0.0.1:9/capture';

export interface ExternalIssuer {
  url: string;
  /** The subject the next sign-ins get. */
  signInAs(subject: string): void;
  close(): Promise<void>;
}

export async function startExternalIssuer(serviceUrl: string, port?: number): Promise<ExternalIssuer> {
  port ??= await freePort();
  const url = `http://127.0.0.1:${port}`;
  let subject = RESEARCHER_ORCID;
  const provider = new Provider(url, {
    clients: [
      {
        client_id: EXTERNAL_CLIENT_ID,
        client_secret: EXTERNAL_CLIENT_SECRET,
        token_endpoint_auth_method: 'client_secret_post',
        redirect_uris: [`${serviceUrl}/login/external/callback`, CAPTURE_REDIRECT],
        grant_types: ['authorization_code'],
        response_types: ['code'],
      },
    ],
    claims: { openid: ['sub'], profile: ['name'] },
    features: { devInteractions: { enabled: false } },
    findAccount: async (_ctx, sub) => ({ accountId: sub, claims: () => ({ sub, name: 'Josiah Carberry' }) }),
    loadExistingGrant: async (ctx) => {
      const { client, session, provider: p } = ctx.oidc;
      if (!client || !session?.accountId) return undefined;
      const grant = new p.Grant({ clientId: client.clientId, accountId: session.accountId });
      grant.addOIDCScope('openid profile');
      await grant.save();
      return grant;
    },
    ttl: {
      AccessToken: 600,
      AuthorizationCode: 60,
      IdToken: 600,
      Interaction: 600,
      Session: 600,
      Grant: 600,
    },
    jwks: {
      keys: [
        {
          ...(await exportJWK((await generateKeyPair('RS256', { extractable: true })).privateKey)),
          alg: 'RS256',
          use: 'sig',
          kid: 'external-1',
        },
      ],
    } as never,
    interactions: { url: (_ctx, interaction) => `/interaction/${interaction.uid}` },
  });
  const callback = provider.callback();
  const server: Server = createServer((req, res) => {
    if (req.url?.startsWith('/interaction/')) {
      // Automatic sign-in: the interaction finishes at once with the configured researcher.
      provider
        .interactionFinished(req, res, { login: { accountId: subject } }, { mergeWithLastSubmission: false })
        .catch((err: unknown) => {
          res.statusCode = 500;
          res.end(String(err));
        });
      return;
    }
    // The provider answers its own errors; its handler's promise never rejects.
    void callback(req, res);
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return {
    url,
    signInAs: (next) => {
      subject = next;
    },
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

export const pkcePair = () => {
  const verifier = crypto.randomBytes(32).toString('base64url');
  const challenge = crypto.createHash('sha256').update(verifier).digest('base64url');
  return { verifier, challenge };
};

/** An id_token straight from the external issuer, as a command-line user would get one. */
export async function externalIdToken(issuer: ExternalIssuer): Promise<string> {
  const browser = new Browser();
  const { verifier, challenge } = pkcePair();
  const authorize = new URL(`${issuer.url}/auth`);
  authorize.search = new URLSearchParams({
    client_id: EXTERNAL_CLIENT_ID,
    response_type: 'code',
    redirect_uri: CAPTURE_REDIRECT,
    scope: 'openid',
    nonce: crypto.randomUUID(),
    state: crypto.randomUUID(),
    code_challenge: challenge,
    code_challenge_method: 'S256',
  }).toString();
  const { url } = await browser.follow(authorize.href, CAPTURE_REDIRECT);
  const code = new URL(url).searchParams.get('code');
  if (!code) throw new Error(`no code: ${url}`);
  const response = await fetch(`${issuer.url}/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      grant_type: 'authorization_code',
      code,
      redirect_uri: CAPTURE_REDIRECT,
      client_id: EXTERNAL_CLIENT_ID,
      client_secret: EXTERNAL_CLIENT_SECRET,
      code_verifier: verifier,
    }).toString(),
  });
  const body = (await response.json()) as { id_token?: string };
  if (!body.id_token) throw new Error(`no id_token: ${JSON.stringify(body)}`);
  return body.id_token;
}
