/**
 * Requests on the wire exactly as a client sends them: the method, the raw path and query string
 * (in the client's order, empty values and odd shapes such as `?&` kept), the client's headers and
 * the body bytes. Node's `fetch` would normalise the URL; this sends it as given.
 */
import http from 'node:http';

export interface WireRequest {
  method: string;
  /** Path and query string exactly as the client puts them on the request line. */
  target: string;
  headers?: Record<string, string>;
  body?: string | Buffer;
}

export interface WireResponse {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
  /** The body parsed as JSON, or undefined when it is not JSON. */
  json: any;
}

export function send(baseUrl: string, request: WireRequest): Promise<WireResponse> {
  const base = new URL(baseUrl);
  const headers: Record<string, string | number> = { ...request.headers };
  if (request.body !== undefined) headers['Content-Length'] = Buffer.byteLength(request.body);
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: base.hostname,
        port: base.port,
        method: request.method,
        path: request.target,
        headers,
        // One connection per request, as a client without a session does.
        agent: false,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let json: unknown;
          try {
            json = text ? JSON.parse(text) : undefined;
          } catch {
            json = undefined;
          }
          resolve({ status: res.statusCode ?? 0, headers: res.headers, text, json });
        });
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    if (request.body !== undefined) req.write(request.body);
    req.end();
  });
}
