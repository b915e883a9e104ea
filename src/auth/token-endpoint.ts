/**
 * `POST /token`: the original's form contract in front of the provider's token endpoint.
 * Each request is translated to one of the provider's grants and run in-process through the
 * provider's own handler, then answered as `{access_token, token_type, expires}`.
 */
import type Provider from 'oidc-provider';
import { TokenRequestRefused, Unauthorized, UnsupportedGrant } from '../errors.ts';
import { runInProcess } from './in-process-request.ts';
import { FACADE_CLIENT_ID, OIDC_PREFIX } from './provider.ts';
import { PASSWORD_GRANT } from './grants/password.ts';
import { SITE_CLIENT_GRANT } from './grants/site-client.ts';
import { ID_TOKEN_TYPE, TOKEN_EXCHANGE_GRANT } from './grants/external-id-token.ts';
import type { LoginRateLimiter } from './login-rate-limit.ts';

export const BAD_USER_CREDENTIALS = 'Incorrect username or password';
export const BAD_CLIENT_CREDENTIALS = 'Incorrect client_id or client_secret';

/** `{days, hours, minutes}` of a lifetime in seconds, as the original reports it. */
export function expiresOf(seconds: number): { days: number; hours: number; minutes: number } {
  const minutesTotal = Math.floor(seconds / 60);
  return {
    days: Math.floor(minutesTotal / 1440),
    hours: Math.floor((minutesTotal % 1440) / 60),
    minutes: minutesTotal % 60,
  };
}

/** Client credentials from an HTTP Basic header (RFC 6749 §2.3.1 form-encodes each part). */
export function basicCredentials(header: string | undefined): { id: string; secret: string } | undefined {
  const match = header ? /^Basic[ ]+([A-Za-z0-9+/=._~-]+)[ ]*$/i.exec(header) : null;
  if (!match) return undefined;
  const decoded = Buffer.from(match[1]!, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 0) return undefined;
  const part = (s: string) => {
    try {
      return decodeURIComponent(s.replace(/\+/g, ' '));
    } catch {
      return s;
    }
  };
  return { id: part(decoded.slice(0, colon)), secret: part(decoded.slice(colon + 1)) };
}

const looksLikeJwt = (value: string) => /^[\w-]+\.[\w-]+\.[\w-]+$/.test(value);

interface Translated {
  /** Key the failed-attempt counter uses. */
  account: string | undefined;
  failure: string;
  form: Record<string, string>;
}

function translate(
  form: Record<string, unknown>,
  authorization: string | undefined,
  exchangeEnabled: boolean,
): Translated {
  const body = form;
  const field = (name: string) => (typeof body[name] === 'string' ? (body[name] as string) : '');
  const grantType = field('grant_type');
  if (grantType === 'password') {
    const username = field('username');
    return {
      account: `user:${username}`,
      failure: BAD_USER_CREDENTIALS,
      form: { grant_type: PASSWORD_GRANT, username, password: field('password') },
    };
  }
  if (grantType === 'client_credentials') {
    const basic = basicCredentials(authorization);
    const clientId = field('client_id') || basic?.id || '';
    const secret = field('client_secret') || basic?.secret || '';
    if (exchangeEnabled && secret === '' && looksLikeJwt(clientId)) {
      return {
        account: undefined,
        failure: BAD_CLIENT_CREDENTIALS,
        form: {
          grant_type: TOKEN_EXCHANGE_GRANT,
          subject_token: clientId,
          subject_token_type: ID_TOKEN_TYPE,
        },
      };
    }
    return {
      account: `client:${clientId}`,
      failure: BAD_CLIENT_CREDENTIALS,
      form: { grant_type: SITE_CLIENT_GRANT, site_client_id: clientId, site_client_secret: secret },
    };
  }
  throw new UnsupportedGrant(`Unsupported grant_type: use password or client_credentials`);
}

/** Runs the provider's token endpoint in-process as the facade's internal client. */
export class ProviderTokenIssuer {
  private readonly handler: ReturnType<Provider['callback']>;
  private readonly authorization: string;

  constructor(provider: Provider, facadeClientSecret: string) {
    this.handler = provider.callback();
    const credentials = `${FACADE_CLIENT_ID}:${encodeURIComponent(facadeClientSecret)}`;
    this.authorization = `Basic ${Buffer.from(credentials).toString('base64')}`;
  }

  async issue(
    form: Record<string, string>,
    remoteAddress?: string,
  ): Promise<
    | { accessToken: string; expiresIn: number | undefined }
    | { error: string; description: string; status: number }
  > {
    const answer = await runInProcess(this.handler, {
      method: 'POST',
      path: `${OIDC_PREFIX}/token`,
      headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: this.authorization },
      body: new URLSearchParams(form).toString(),
      remoteAddress,
    });
    let parsed: Record<string, unknown> = {};
    try {
      parsed = JSON.parse(answer.body) as Record<string, unknown>;
    } catch {
      // Not JSON: reported as a server error below.
    }
    if (answer.status === 200 && typeof parsed.access_token === 'string') {
      return {
        accessToken: parsed.access_token,
        expiresIn: typeof parsed.expires_in === 'number' ? parsed.expires_in : undefined,
      };
    }
    return {
      status: answer.status,
      error: typeof parsed.error === 'string' ? parsed.error : 'server_error',
      description: String(parsed.error_description ?? parsed.error ?? 'token endpoint failed'),
    };
  }
}

/** What `POST /token` answers on success, as the original does. */
export interface TokenAnswer {
  access_token: string;
  token_type: 'bearer';
  expires: { days: number; hours: number; minutes: number };
}

/** The logins of `POST /token`: each form translated to a grant, counted by the rate limiter. */
export class TokenLogins {
  constructor(
    private readonly issuer: ProviderTokenIssuer,
    private readonly limiter: LoginRateLimiter,
    private readonly options: { tokenTtlSeconds: number; exchangeEnabled: boolean },
  ) {}

  /** `form` is the request body, `authorization` its header (HTTP Basic client credentials). */
  async login(
    form: unknown,
    authorization: string | undefined,
    remoteAddress: string | undefined,
  ): Promise<TokenAnswer> {
    const { accessToken, expiresIn } = await this.issue(form, authorization, remoteAddress);
    return { access_token: accessToken, token_type: 'bearer', expires: expiresOf(expiresIn) };
  }

  /** The same login, answering the token and its lifetime in seconds (OAuth 2.0's `expires_in`). */
  async issue(
    form: unknown,
    authorization: string | undefined,
    remoteAddress: string | undefined,
  ): Promise<{ accessToken: string; expiresIn: number }> {
    const body = (form ?? {}) as Record<string, unknown>;
    const translated = translate(body, authorization, this.options.exchangeEnabled);
    const address = remoteAddress ?? 'unknown';
    await this.limiter.admit(translated.account, address);
    const result = await this.issuer.issue(translated.form, remoteAddress);
    if ('accessToken' in result) {
      await this.limiter.succeeded(translated.account, address);
      return { accessToken: result.accessToken, expiresIn: result.expiresIn ?? this.options.tokenTtlSeconds };
    }
    if (result.error === 'invalid_grant') {
      throw new Unauthorized(translated.failure);
    }
    if (result.status >= 500) throw new Error(`token endpoint failed: ${result.error}`);
    throw new TokenRequestRefused(result.description);
  }
}
