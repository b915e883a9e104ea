/**
 * Checks `Authorization: Bearer <JWT>` on private routes: signature (the service's own keys,
 * in-process), issuer, audience, expiry, then revocation and the account still being active.
 */
import type { RequestHandler } from 'express';
import { createLocalJWKSet, errors as joseErrors, jwtVerify, type JWK, type JWTPayload } from 'jose';
import { Forbidden, Unauthorized } from '../errors.ts';
import type { Accounts } from '../accounts/index.ts';
import type { Principal } from '../accounts/index.ts';
import type { RevocationList } from './revocation-list.ts';
import { PRINCIPAL_KIND_CLAIM, SITE_ID_CLAIM } from './resource.ts';

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

export function bearerTokenOf(header: string | undefined): string | undefined {
  if (!header) return undefined;
  const match = /^Bearer[ ]+([^ ]+)[ ]*$/i.exec(header);
  return match?.[1];
}

export function bearerGuard(
  verifier: AccessTokenVerifier,
  revocations: RevocationList,
  accounts: Accounts,
): RequestHandler {
  return async (req, res, next) => {
    const token = bearerTokenOf(req.headers.authorization);
    if (!token) throw new Unauthorized(INVALID_OR_MISSING);
    const claims = await verifier.verify(token);
    if (await revocations.isRevoked(claims.jti!)) throw new Unauthorized(INVALIDATED);
    const subject = claims.sub!;
    let principal: Principal;
    if (claims[PRINCIPAL_KIND_CLAIM] === 'site_client') {
      // A site client keeps working whoever administers its site; only deleting it ends it.
      const client = await accounts.getSiteClient(subject);
      if (!client) throw new Unauthorized(INVALIDATED);
      principal = {
        kind: 'site_client',
        subject,
        siteId: client.site_id ?? claims[SITE_ID_CLAIM],
        isRuntimeAdmin: false,
      };
    } else {
      const user = await accounts.getUser(subject);
      if (!user || user.disabled) throw new Unauthorized(INVALIDATED);
      principal = { kind: 'user', subject, isRuntimeAdmin: accounts.isRuntimeAdmin(user) };
    }
    res.locals.principal = principal;
    next();
  };
}

/**
 * For public endpoints that answer a logged-in caller differently (a site client's default job
 * filter): sets `res.locals.principal` when the request carries a valid token, and otherwise
 * goes on as an anonymous request. Real clients send their token everywhere, even a stale one,
 * and a public endpoint must not refuse them for it.
 */
export function identifyCaller(guard: RequestHandler): RequestHandler {
  return async (req, res, next) => {
    if (bearerTokenOf(req.headers.authorization)) {
      try {
        await guard(req, res, () => {});
      } catch (err) {
        if (!(err instanceof Unauthorized)) throw err;
        delete res.locals.principal;
      }
    }
    next();
  };
}

export const SITE_CLIENTS_ONLY =
  'This operation is for site clients: log in with your site client credentials (grant_type=client_credentials).';

/** Guard for operations only a site client may call: 401 without a valid token, 403 for a user. */
export function requireSiteClient(guard: RequestHandler): RequestHandler {
  return async (req, res, next) => {
    let authenticated = false;
    await guard(req, res, () => {
      authenticated = true;
    });
    if (!authenticated) return;
    if ((res.locals.principal as Principal | undefined)?.kind !== 'site_client') {
      throw new Forbidden(SITE_CLIENTS_ONLY);
    }
    next();
  };
}
