/**
 * The service as a relying party of the external researcher identity issuer (ORCID in
 * production): discovery, the authorization-code + PKCE redirect flow, and verification of that
 * issuer's id_tokens (signature against its published keys, issuer, audience = our client id).
 */
import * as oidcClient from 'openid-client';
import { createRemoteJWKSet, jwtVerify, type JWTVerifyGetKey } from 'jose';
import type { Config } from '../config.ts';

export interface ExternalSubject {
  sub: string;
  email?: string;
  name?: string;
}

export interface PendingExternalLogin {
  state: string;
  nonce: string;
  codeVerifier: string;
}

type ExternalConfig = NonNullable<Config['externalOidc']>;

function subjectOf(claims: Record<string, unknown>): ExternalSubject | null {
  if (typeof claims.sub !== 'string' || claims.sub === '') return null;
  const out: ExternalSubject = { sub: claims.sub };
  if (typeof claims.email === 'string') out.email = claims.email;
  const name =
    typeof claims.name === 'string'
      ? claims.name
      : [claims.given_name, claims.family_name].filter((part) => typeof part === 'string').join(' ');
  if (name) out.name = name;
  return out;
}

export class ExternalIdentity {
  private discovered: Promise<oidcClient.Configuration> | undefined;
  private keys: JWTVerifyGetKey | undefined;

  constructor(
    readonly settings: ExternalConfig,
    /** Where the issuer sends the browser back: `${publicUrl}/login/external/callback`. */
    readonly redirectUri: string,
  ) {}

  get label(): string {
    return this.settings.label;
  }

  /** Discovery is lazy and retried: the issuer may be unreachable when the service starts. */
  configuration(): Promise<oidcClient.Configuration> {
    this.discovered ??= oidcClient
      .discovery(
        new URL(this.settings.issuer),
        this.settings.clientId,
        this.settings.clientSecret,
        undefined,
        new URL(this.settings.issuer).protocol === 'http:'
          ? { execute: [oidcClient.allowInsecureRequests] }
          : undefined,
      )
      .catch((err: unknown) => {
        this.discovered = undefined;
        throw err;
      });
    return this.discovered;
  }

  async begin(): Promise<{ url: URL; pending: PendingExternalLogin }> {
    const config = await this.configuration();
    const pending: PendingExternalLogin = {
      state: oidcClient.randomState(),
      nonce: oidcClient.randomNonce(),
      codeVerifier: oidcClient.randomPKCECodeVerifier(),
    };
    const url = oidcClient.buildAuthorizationUrl(config, {
      redirect_uri: this.redirectUri,
      scope: 'openid',
      state: pending.state,
      nonce: pending.nonce,
      code_challenge: await oidcClient.calculatePKCECodeChallenge(pending.codeVerifier),
      code_challenge_method: 'S256',
    });
    return { url, pending };
  }

  /** Completes the redirect flow; answers the verified subject and the issuer's id_token. */
  async finish(
    callbackUrl: URL,
    pending: PendingExternalLogin,
  ): Promise<{ subject: ExternalSubject; idToken: string }> {
    const config = await this.configuration();
    const tokens = await oidcClient.authorizationCodeGrant(config, callbackUrl, {
      pkceCodeVerifier: pending.codeVerifier,
      expectedState: pending.state,
      expectedNonce: pending.nonce,
      idTokenExpected: true,
    });
    const subject = subjectOf((tokens.claims() ?? {}) as Record<string, unknown>);
    if (!subject || !tokens.id_token) throw new Error('the external issuer returned no subject');
    return { subject, idToken: tokens.id_token };
  }

  /** The subject of a valid id_token of the external issuer for our client, else null. */
  async verifyIdToken(idToken: string): Promise<ExternalSubject | null> {
    try {
      const config = await this.configuration();
      const metadata = config.serverMetadata();
      if (!metadata.jwks_uri) return null;
      this.keys ??= createRemoteJWKSet(new URL(metadata.jwks_uri));
      const { payload } = await jwtVerify(idToken, this.keys, {
        issuer: metadata.issuer,
        audience: this.settings.clientId,
        algorithms: ['RS256', 'PS256', 'ES256', 'EdDSA'],
      });
      return subjectOf(payload as Record<string, unknown>);
    } catch {
      return null;
    }
  }
}
