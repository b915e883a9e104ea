/**
 * Runs one request through the provider's own HTTP handler without a socket: the `/token`
 * facade uses it so every token goes through the provider's token endpoint pipeline (client
 * authentication, grant dispatch, token formats, events) exactly as an HTTP call would.
 */
import { IncomingMessage, ServerResponse } from 'node:http';
import { Socket } from 'node:net';

export interface InProcessResponse {
  status: number;
  headers: Record<string, string | string[] | number | undefined>;
  body: string;
}

/** A Node request handler, such as the provider's (Koa's, which answers with a promise). */
type Handler = (req: IncomingMessage, res: ServerResponse) => unknown;

export function runInProcess(
  handler: Handler,
  request: {
    method: string;
    path: string;
    headers: Record<string, string>;
    body?: string;
    remoteAddress?: string;
  },
): Promise<InProcessResponse> {
  const socket = new Socket();
  // Koa reads the caller's address from the socket; keep the real one for the provider's logs.
  Object.defineProperty(socket, 'remoteAddress', { value: request.remoteAddress ?? '127.0.0.1' });
  const req = new IncomingMessage(socket);
  req.method = request.method;
  req.url = request.path;
  const body = request.body === undefined ? undefined : Buffer.from(request.body);
  const headers: Record<string, string> = { host: 'localhost', ...request.headers };
  if (body) headers['content-length'] = String(body.length);
  for (const [name, value] of Object.entries(headers)) {
    req.headers[name.toLowerCase()] = value;
    req.rawHeaders.push(name, value);
  }
  if (body) req.push(body);
  req.push(null);

  return new Promise<InProcessResponse>((resolve, reject) => {
    const res = new ServerResponse(req);
    const chunks: Buffer[] = [];
    const collect = (chunk: unknown, encoding?: unknown) => {
      if (chunk === undefined || chunk === null || typeof chunk === 'function') return;
      chunks.push(
        Buffer.isBuffer(chunk)
          ? chunk
          : Buffer.from(String(chunk), typeof encoding === 'string' ? (encoding as BufferEncoding) : 'utf8'),
      );
    };
    res.write = ((chunk: unknown, encoding?: unknown) => {
      collect(chunk, encoding);
      return true;
    }) as typeof res.write;
    res.end = ((chunk?: unknown, encoding?: unknown) => {
      collect(chunk, encoding);
      resolve({
        status: res.statusCode,
        headers: res.getHeaders(),
        body: Buffer.concat(chunks).toString('utf8'),
      });
      return res;
    }) as typeof res.end;
    try {
      // A handler that fails after answering has answered: only a failure before the answer counts.
      Promise.resolve(handler(req, res)).catch(reject);
    } catch (err) {
      reject(err);
    }
  });
}
