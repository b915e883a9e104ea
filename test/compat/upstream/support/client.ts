/**
 * The original's own test clients (`RuntimeApiUserClient`, `RuntimeApiSiteClient`), as they put
 * their calls on the wire: a token from `POST /token` (a password or client-credentials form),
 * then `request(method, path, data)` with the data as `requests` params for a GET and as a JSON
 * body otherwise, and `raise_for_status`, so any 4xx or 5xx throws an `HttpError` holding the
 * response. Written from the requests they send, not from their code.
 */
import { jsonDumps, requestsForm, requestsQuery, type PyParam } from '../../support/python.ts';
import { send, type WireResponse } from '../../support/wire.ts';

/** What `requests` sends with every call. */
const REQUESTS_HEADERS = {
  'User-Agent': 'python-requests/2.32.3',
  'Accept-Encoding': 'gzip, deflate',
  Accept: '*/*',
  Connection: 'keep-alive',
};

/** `raise_for_status`: the status was 4xx or 5xx. */
export class HttpError extends Error {
  constructor(readonly response: WireResponse) {
    super(`HTTP ${response.status}: ${response.text.slice(0, 500)}`);
  }
}

/**
 * `requests.utils.requote_uri`: characters a URL may hold as they are (reserved and unreserved,
 * and `%`) stay; everything else goes out percent-encoded as UTF-8.
 */
export function requoteUri(target: string): string {
  return target.replace(/[^A-Za-z0-9\-._~!#$%&'()*+,/:;=?@[\]]/gu, (c) =>
    [...Buffer.from(c, 'utf8')].map((b) => `%${b.toString(16).toUpperCase().padStart(2, '0')}`).join(''),
  );
}

/** A call without the test client's token (the original's tests use bare `requests` for these). */
export async function plainRequest(
  baseUrl: string,
  method: string,
  target: string,
  options: {
    json?: unknown;
    form?: Array<[string, string]>;
    /** A body sent as it is (its Content-Type in `headers`). */
    raw?: string | Buffer;
    headers?: Record<string, string>;
  } = {},
): Promise<WireResponse> {
  const headers: Record<string, string> = { ...REQUESTS_HEADERS, ...options.headers };
  let body: string | Buffer | undefined;
  if (options.raw !== undefined) {
    body = options.raw;
  } else if (options.json !== undefined) {
    body = jsonDumps(options.json);
    headers['Content-Type'] = 'application/json';
  } else if (options.form !== undefined) {
    body = requestsForm(options.form);
    headers['Content-Type'] = 'application/x-www-form-urlencoded';
  } else if (method !== 'GET') {
    headers['Content-Length'] = '0';
  }
  return send(baseUrl, { method, target: requoteUri(target), headers, body });
}

abstract class RuntimeApiClient {
  private token: string | undefined;

  constructor(readonly baseUrl: string) {}

  protected abstract tokenForm(): Array<[string, string]>;

  /** `get_token`: the access token of the client's grant. */
  async ensureToken(): Promise<string> {
    if (this.token === undefined) {
      const res = await plainRequest(this.baseUrl, 'POST', '/token', { form: this.tokenForm() });
      if (typeof res.json?.access_token !== 'string') throw new Error(`Getting token failed: ${res.text}`);
      this.token = res.json.access_token as string;
    }
    return this.token;
  }

  /** The Authorization header the client sends. */
  async headers(): Promise<Record<string, string>> {
    return { Authorization: `Bearer ${await this.ensureToken()}` };
  }

  /**
   * `request(method, url_path, params_or_json_data)`: GET data become query parameters (after any
   * the path already holds), other methods send it as `json=`; a 4xx or 5xx throws `HttpError`.
   */
  async request(
    method: string,
    path: string,
    data?: Record<string, PyParam> | unknown,
  ): Promise<WireResponse> {
    const upper = method.toUpperCase();
    let target = path;
    let json: unknown;
    if (upper === 'GET') {
      if (data !== undefined && data !== null) {
        const query = requestsQuery(Object.entries(data as Record<string, PyParam>));
        if (query) target += (target.includes('?') ? '&' : '?') + query;
      }
    } else {
      json = data ?? undefined;
    }
    const res = await plainRequest(this.baseUrl, upper, target, {
      json,
      headers: await this.headers(),
    });
    if (res.status >= 400) throw new HttpError(res);
    return res;
  }

  /**
   * The response of a call that must fail (`pytest.raises(requests.HTTPError)`): throws when the
   * call succeeded.
   */
  async failing(method: string, path: string, data?: unknown): Promise<WireResponse> {
    try {
      const res = await this.request(method, path, data);
      throw new Error(`expected ${method} ${path} to fail, got ${res.status}: ${res.text.slice(0, 300)}`);
    } catch (err) {
      if (err instanceof HttpError) return err.response;
      throw err;
    }
  }
}

export class RuntimeApiUserClient extends RuntimeApiClient {
  constructor(
    baseUrl: string,
    readonly username: string,
    readonly password: string,
  ) {
    super(baseUrl);
  }

  protected tokenForm(): Array<[string, string]> {
    return [
      ['grant_type', 'password'],
      ['username', this.username],
      ['password', this.password],
    ];
  }
}

export class RuntimeApiSiteClient extends RuntimeApiClient {
  constructor(
    baseUrl: string,
    readonly siteId: string,
    readonly clientId: string,
    readonly clientSecret: string,
  ) {
    super(baseUrl);
  }

  protected tokenForm(): Array<[string, string]> {
    return [
      ['grant_type', 'client_credentials'],
      ['client_id', this.clientId],
      ['client_secret', this.clientSecret],
    ];
  }

  /** `mint_id`: one id of the schema class, through `POST /pids/mint`. */
  mintId(schemaClass: string, howMany = 1): Promise<WireResponse> {
    return this.request('POST', '/pids/mint', { schema_class: { id: schemaClass }, how_many: howMany });
  }
}
