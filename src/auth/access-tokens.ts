/**
 * Access tokens on private routes: signature (the service's own keys, in-process), issuer,
 * audience, expiry, then revocation and the account still being active. The HTTP guards
 * (src/http/guards.ts) ask `TokenAuthenticator` who is calling.
 */
import { createLocalJWKSet, errors as joseErrors, jwtVerify, type JWK, type JWTPayload } from 'jose';
import { Unauthorized } from '../errors.ts';
import { credentialsVersion, type Accounts, type Principal } from '../accounts/index.ts';
import type { RevocationList } from './revocation-list.ts';
import { CREDENTIALS_VERSION_CLAIM, PRINCIPAL_KIND_CLAIM, SITE_ID_CLAIM } from './resource.ts';

export const INVALID_OR_MISSING = 'Access token is invalid or missing. Please log in again.';
export const EXPIRED = 'Access token has expired. Please log in again.';
export const INVALIDATED = 'Access token has been invalidated. Please log in again.';

/** Why a token of ours from another public URL is refused, and what to do. */
export const issuedElsewhere = (tokenIssuer: string, issuer: string) =>
  `Access token was issued by ${tokenIssuer}, but this service now names itself ${issuer} (PUBLIC_URL). ` +
  'Please log in again, or run the service with the PUBLIC_URL the token was issued under.';

export const SIGNING_ALGORITHMS = ['RS256', 'ES256', 'PS256', 'EdDSA'];

export class AccessTokenVerifier {
  private readonly keys: ReturnType<typeof createLocalJWKSet>;

  constructor(
    verificationKeys: { keys: JWK[] },
    private readonly issuer: string,
    private readonly audience: string,
  ) {
    this.keys = createLocalJWKSet(verificationKeys);
  }

  /** The token's claims when it is ours and unexpired; throws 401 with the precise reason otherwise. */
  async verify(token: string, options: { allowExpired?: boolean } = {}): Promise<JWTPayload> {
    try {
      const { payload } = await jwtVerify(token, this.keys, {
        issuer: this.issuer,
        audience: this.audience,
        algorithms: SIGNING_ALGORITHMS,
        requiredClaims: ['sub', 'exp', 'jti'],
        ...(options.allowExpired ? { currentDate: new Date(0) } : {}),
      });
      return payload;
    } catch (err) {
      if (err instanceof joseErrors.JWTExpired) throw new Unauthorized(EXPIRED);
      // Signed with our keys (claims are checked after the signature) but for another issuer: the
      // service ran under another PUBLIC_URL when it was issued.
      if (err instanceof joseErrors.JWTClaimValidationFailed && err.claim === 'iss')
        throw new Unauthorized(issuedElsewhere(String(err.payload.iss), this.issuer));
      throw new Unauthorized(INVALID_OR_MISSING);
    }
  }
}

/**
 * Who sent a request, from the token of its `Authorization: Bearer <JWT>` header: it must be ours,
 * unexpired and not revoked, and its account must still be active.
 */
export class TokenAuthenticator {
  constructor(
    private readonly verifier: AccessTokenVerifier,
    private readonly revocations: RevocationList,
    private readonly accounts: Accounts,
  ) {}

  /** The caller's principal; throws Unauthorized with the precise reason otherwise. */
  async principalOf(token: string | undefined): Promise<Principal> {
    if (!token) throw new Unauthorized(INVALID_OR_MISSING);
    const claims = await this.verifier.verify(token);
    if (await this.revocations.isRevoked(claims.jti!)) throw new Unauthorized(INVALIDATED);
    const subject = claims.sub!;
    // Issued before the password or secret last changed (tokens older than versions carry none: 0).
    const issuedUnder = Number(claims[CREDENTIALS_VERSION_CLAIM] ?? 0);
    if (claims[PRINCIPAL_KIND_CLAIM] === 'site_client') {
      // A site client keeps working whoever administers its site; a new secret or revoking it ends it.
      const client = await this.accounts.getSiteClient(subject);
      if (!client || credentialsVersion(client) !== issuedUnder) throw new Unauthorized(INVALIDATED);
      return {
        kind: 'site_client',
        subject,
        siteId: client.site_id ?? claims[SITE_ID_CLAIM],
        isRuntimeAdmin: false,
      };
    }
    const user = await this.accounts.getUser(subject);
    if (!user || user.disabled || credentialsVersion(user) !== issuedUnder) {
      throw new Unauthorized(INVALIDATED);
    }
    return { kind: 'user', subject, isRuntimeAdmin: this.accounts.isRuntimeAdmin(user) };
  }

  /**
   * Ends a token at once (logout, RFC 7009 revocation). Anyone holding a token may revoke it;
   * a token that is not ours or unreadable is ignored.
   */
  async revoke(token: string | undefined): Promise<void> {
    if (!token) return;
    let claims;
    try {
      claims = await this.verifier.verify(token, { allowExpired: true });
    } catch (err) {
      if (err instanceof Unauthorized) return;
      throw err;
    }
    await this.revocations.revoke(claims.jti!, claims.exp!);
  }
}
