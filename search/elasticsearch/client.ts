/**
 * The Elasticsearch client as the settings describe it: one node or several, an API key or the
 * URL's user and password, and TLS trusting a CA file or a CA certificate's SHA-256 fingerprint,
 * as a stock Elasticsearch 8 cluster (security on, self-signed HTTP CA) needs.
 */
import fs from 'node:fs';
import { Client, type ClientOptions } from '@elastic/elasticsearch';
import { SearchIndexUnavailable } from '../errors.ts';

export interface ElasticsearchConnection {
  /** One URL or several, comma-separated (ELASTICSEARCH_URL). */
  url: string;
  apiKey?: string;
  /** Path of a PEM CA certificate. */
  caCert?: string;
  /** SHA-256 fingerprint of the CA certificate, hex without colons. */
  caFingerprint?: string;
}

/** The origins of the configured nodes, for messages and logs (never user, password or key). */
export function originsOf(url: string): string {
  return url
    .split(',')
    .map((u) => new URL(u.trim()).origin)
    .join(',');
}

export function clientOptions(connection: ElasticsearchConnection): ClientOptions {
  const nodes = connection.url.split(',').map((u) => u.trim());
  let ca: string | undefined;
  if (connection.caCert) {
    try {
      ca = fs.readFileSync(connection.caCert, 'utf8');
    } catch (err) {
      throw new Error(`cannot read ELASTICSEARCH_CA_CERT (${connection.caCert}): ${(err as Error).message}`);
    }
  }
  // A fingerprint pins the CA instead of a CA file: the client checks it on every connection, so
  // the chain need not verify against a CA it was given.
  const tls = ca ? { ca } : connection.caFingerprint ? { rejectUnauthorized: false } : undefined;
  return {
    nodes,
    ...(connection.apiKey ? { auth: { apiKey: connection.apiKey } } : {}),
    ...(tls ? { tls } : {}),
    ...(connection.caFingerprint ? { caFingerprint: connection.caFingerprint } : {}),
    requestTimeout: 30_000,
    maxRetries: 2,
  };
}

export function createClient(connection: ElasticsearchConnection): Client {
  return new Client(clientOptions(connection));
}

/**
 * A client that reached the cluster; otherwise an error whose message names the setting at fault
 * (start-up fails with it).
 */
export async function connectClient(connection: ElasticsearchConnection): Promise<Client> {
  const client = createClient(connection);
  try {
    await client.info({}, { requestTimeout: 5000, maxRetries: 0 });
  } catch (err) {
    await client.close().catch(() => undefined);
    const status = statusOf(err);
    const hint =
      status === 401
        ? ' (check ELASTICSEARCH_API_KEY or the user and password in ELASTICSEARCH_URL)'
        : /certificate|self.signed|fingerprint/i.test(String((err as Error).message))
          ? " (set ELASTICSEARCH_CA_CERT or ELASTICSEARCH_CA_FINGERPRINT to trust the cluster's CA)"
          : '';
    throw new Error(
      `cannot reach Elasticsearch at ELASTICSEARCH_URL (${originsOf(connection.url)}): ${describeError(err)}${hint}`,
    );
  }
  return client;
}

/** The HTTP status of an Elasticsearch response error (undefined for connection failures). */
export function statusOf(err: unknown): number | undefined {
  return (err as { meta?: { statusCode?: number } })?.meta?.statusCode;
}

/** The `error.type` of an Elasticsearch response error body, and its root cause's. */
export function errorTypesOf(err: unknown): string[] {
  const body = (err as { meta?: { body?: any } })?.meta?.body;
  const error = body?.error;
  if (!error || typeof error !== 'object') return [];
  return [error.type, ...(error.root_cause ?? []).map((c: { type?: string }) => c.type)].filter(
    (t): t is string => typeof t === 'string',
  );
}

/** A one-line description of an Elasticsearch error for logs: status, type and reason, bounded. */
export function describeError(err: unknown): string {
  const status = statusOf(err);
  const body = (err as { meta?: { body?: any } })?.meta?.body;
  const reason = body?.error?.root_cause?.[0]?.reason ?? body?.error?.reason ?? (err as Error)?.message;
  return `${status ?? (err as Error)?.name ?? 'error'}${errorTypesOf(err)[0] ? ` ${errorTypesOf(err)[0]}` : ''}: ${String(reason).slice(0, 300)}`;
}

/**
 * Runs one of the index's operations, turning Elasticsearch's own errors (a refused credential, a
 * full queue, a lost connection) into SearchIndexUnavailable: a 503 for a user, with nothing of
 * the engine's text in it; the cause stays for the logs.
 */
export async function guarded<T>(what: string, run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (err) {
    if (err instanceof SearchIndexUnavailable) throw err;
    throw new SearchIndexUnavailable(`Elasticsearch ${what} failed: ${describeError(err)}`, { cause: err });
  }
}
