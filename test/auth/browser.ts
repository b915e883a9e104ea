/** A minimal browser for redirect flows: a cookie jar per host and redirects followed by hand. */

export class Browser {
  private readonly jar = new Map<string, Map<string, string>>();

  private cookieHeader(url: URL): string {
    const cookies = this.jar.get(url.host);
    return cookies ? [...cookies].map(([k, v]) => `${k}=${v}`).join('; ') : '';
  }

  private remember(url: URL, response: Response): void {
    for (const line of response.headers.getSetCookie()) {
      const [pair, ...attributes] = line.split(';');
      const eq = pair!.indexOf('=');
      const name = pair!.slice(0, eq).trim();
      const value = pair!.slice(eq + 1).trim();
      const cookies = this.jar.get(url.host) ?? new Map<string, string>();
      const expired = attributes.some(
        (a) => /^\s*max-age=0\s*$/i.test(a) || /expires=Thu, 01 Jan 1970/i.test(a),
      );
      if (expired || value === '') cookies.delete(name);
      else cookies.set(name, value);
      this.jar.set(url.host, cookies);
    }
  }

  /** One request, no redirect following. */
  async request(url: string, init: RequestInit = {}): Promise<Response> {
    const target = new URL(url);
    const headers = new Headers(init.headers);
    const cookie = this.cookieHeader(target);
    if (cookie) headers.set('cookie', cookie);
    const response = await fetch(target, { ...init, headers, redirect: 'manual' });
    this.remember(target, response);
    return response;
  }

  /**
   * Follows redirects until a non-redirect answer or a Location starting with `stopAt`;
   * answers the last response and the visited URLs.
   */
  async follow(
    url: string,
    stopAt?: string,
  ): Promise<{ response: Response; url: string; visited: string[] }> {
    const visited: string[] = [];
    let current = url;
    for (let hops = 0; hops < 20; hops++) {
      visited.push(current);
      const response = await this.request(current);
      const location = response.headers.get('location');
      if (response.status < 300 || response.status >= 400 || !location)
        return { response, url: current, visited };
      const next = new URL(location, current).href;
      if (stopAt && next.startsWith(stopAt)) {
        visited.push(next);
        return { response, url: next, visited };
      }
      current = next;
    }
    throw new Error(`too many redirects: ${visited.join(' -> ')}`);
  }
}

/** Redeems an authorization code of the docs page's `swagger-ui` client at the provider's token endpoint. */
export function redeemDocsClientCode(
  baseUrl: string,
  code: string,
  redirectUri: string,
  verifier: string,
): Promise<Response> {
  return fetch(`${baseUrl}/oidc/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      grant_type: 'authorization_code',
      code,
      redirect_uri: redirectUri,
      client_id: 'swagger-ui',
      code_verifier: verifier,
    }).toString(),
  });
}
