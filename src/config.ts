/**
 * Every environment variable the service reads, parsed and typed in one place.
 * An invalid value stops start-up with a message naming the variable.
 */
import os from 'node:os';
import { RE2JS } from 're2js';
import path from 'node:path';

export interface Config {
  /** TCP port to listen on. `PORT`, default 8080. */
  port: number;
  /** Interface to bind. `HOST`, default 0.0.0.0 (tests use 127.0.0.1). */
  host: string;
  /** Folder of the embedded SQLite file and other local state. `DATA_DIR`, default ./data. */
  dataDir: string;
  /** MongoDB connection string; when set MongoDB is the source of truth. `MONGO_URL`. */
  mongoUrl: string | undefined;
  /** MongoDB database name. `MONGO_DB`, default `nmdc`. */
  mongoDb: string;
  /** Elasticsearch URL; when set Elasticsearch is the search index. `ELASTICSEARCH_URL`. */
  elasticsearchUrl: string | undefined;
  /** Prefix of the Elasticsearch index names. `ELASTICSEARCH_INDEX_PREFIX`, default `nmdc`. */
  elasticsearchIndexPrefix: string;
  /** First administrator, created or updated at start. `ADMIN_USERNAME` / `ADMIN_PASSWORD`. */
  adminUsername: string | undefined;
  adminPassword: string | undefined;
  /**
   * Shortest password a user may choose, in characters (Unicode code points). `PASSWORD_MIN_LENGTH`,
   * default and lowest 12 (NIST SP 800-63B), at most 128 (the longest password accepted).
   */
  passwordMinLength: number;
  /** Load a small demo data set into an empty store on start. `DEMO_DATA`, default true. */
  demoData: boolean;
  /** pino level: fatal, error, warn, info, debug, trace or silent. `LOG_LEVEL`, default info. */
  logLevel: string;
  /** Public base URL of this service, used as the token issuer. `PUBLIC_URL`, default http://localhost:PORT. */
  publicUrl: string;
  /** Access-token lifetime in seconds. `TOKEN_TTL_SECONDS`, default 86400 (one day). */
  tokenTtlSeconds: number;
  /** Signing keys as a JWKS JSON text (private keys); generated and persisted when absent. `SIGNING_KEYS`. */
  signingKeys: string | undefined;
  /** External researcher identity (ORCID in production). `EXTERNAL_OIDC_ISSUER`, `_CLIENT_ID`, `_CLIENT_SECRET`. */
  externalOidc: { issuer: string; clientId: string; clientSecret: string; label: string } | undefined;
  /** Largest accepted request body. `MAX_BODY_BYTES`, default 1 MiB. */
  maxBodyBytes: number;
  /** Server processes sharing the port (Node cluster). `WORKERS`, default 1; `auto` = one per core. */
  workers: number;
  /**
   * Browser origins allowed to call the API with credentials (CORS). `CORS_ORIGINS`: a
   * comma-separated list of origins (`https://a.example.org,http://localhost:3000`), or a regular
   * expression an origin must match whole. Default: the original service's rule, any
   * `http://localhost:<port>`, `https://*.microbiomedata.org` and `https://microbiomedata.github.io`.
   */
  corsOrigins: CorsOrigins;
  /**
   * An administrator's workflow catalog (YAML or JSON: capabilities, workflows, object types,
   * triggers) merged by id over the seed `config/workflow-catalog.yaml` at start. `WORKFLOW_CATALOG`,
   * a file path; unset: the seed alone. Its contents are checked at start (src/workflows/catalog.ts).
   */
  workflowCatalog: string | undefined;
}

/** Which origins CORS allows: exact origins, or a pattern matched against the whole origin. */
export type CorsOrigins =
  | { kind: 'list'; origins: string[] }
  /** Matched on the linear-time engine: the `Origin` header is the caller's to choose. */
  | { kind: 'pattern'; pattern: { test(origin: string): boolean } };

/** The original service's rule (Starlette `allow_origin_regex`, matched whole). */
export const DEFAULT_CORS_PATTERN =
  '(http://localhost:\\d+)|(https://.+?\\.microbiomedata\\.org)|(https://microbiomedata\\.github\\.io)';

/** `scheme://host[:port]` with a DNS name or an IP address as host (so `(`, `*`, `|` mean a pattern). */
function isOrigin(text: string): boolean {
  try {
    const url = new URL(text);
    return url.origin === text && /^(?:[a-z0-9-]+(?:\.[a-z0-9-]+)*|\[[0-9a-f:.]+\])$/i.test(url.hostname);
  } catch {
    return false;
  }
}

function corsOrigins(env: NodeJS.ProcessEnv): CorsOrigins {
  const raw = env.CORS_ORIGINS?.trim() || DEFAULT_CORS_PATTERN;
  const items = raw.split(',').map((item) => item.trim());
  if (items.every(isOrigin)) return { kind: 'list', origins: items };
  try {
    return { kind: 'pattern', pattern: RE2JS.compile(`^(?:${raw})$`) };
  } catch (err) {
    throw new ConfigError(
      `CORS_ORIGINS must be a comma-separated list of origins or a regular expression: ${(err as Error).message}`,
    );
  }
}

export class ConfigError extends Error {}

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

function integer(env: NodeJS.ProcessEnv, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new ConfigError(`${name} must be an integer between ${min} and ${max}, got "${raw}"`);
  }
  return value;
}

function boolean(env: NodeJS.ProcessEnv, name: string, fallback: boolean): boolean {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (/^(true|1|yes)$/i.test(raw)) return true;
  if (/^(false|0|no)$/i.test(raw)) return false;
  throw new ConfigError(`${name} must be true or false, got "${raw}"`);
}

function url(env: NodeJS.ProcessEnv, name: string, protocols: string[]): string | undefined {
  const raw = env[name];
  if (raw === undefined || raw === '') return undefined;
  let parsed: URL;
  try {
    parsed = new URL(raw);
  } catch {
    throw new ConfigError(`${name} must be a URL, got "${raw}"`);
  }
  if (!protocols.includes(parsed.protocol)) {
    throw new ConfigError(`${name} must use ${protocols.join(' or ')}, got "${parsed.protocol}"`);
  }
  return raw;
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const port = integer(env, 'PORT', 8080, 0, 65535);
  const logLevel = env.LOG_LEVEL || 'info';
  if (!LOG_LEVELS.includes(logLevel)) {
    throw new ConfigError(`LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}, got "${logLevel}"`);
  }
  const adminUsername = env.ADMIN_USERNAME || undefined;
  const adminPassword = env.ADMIN_PASSWORD || undefined;
  if (Boolean(adminUsername) !== Boolean(adminPassword)) {
    throw new ConfigError('ADMIN_USERNAME and ADMIN_PASSWORD must be set together');
  }
  const issuer = url(env, 'EXTERNAL_OIDC_ISSUER', ['http:', 'https:']);
  let externalOidc: Config['externalOidc'];
  if (issuer) {
    const clientId = env.EXTERNAL_OIDC_CLIENT_ID;
    const clientSecret = env.EXTERNAL_OIDC_CLIENT_SECRET;
    if (!clientId || !clientSecret) {
      throw new ConfigError(
        'EXTERNAL_OIDC_CLIENT_ID and EXTERNAL_OIDC_CLIENT_SECRET are required with EXTERNAL_OIDC_ISSUER',
      );
    }
    externalOidc = { issuer, clientId, clientSecret, label: env.EXTERNAL_OIDC_LABEL || 'ORCID' };
  }
  const publicUrl = (url(env, 'PUBLIC_URL', ['http:', 'https:']) ?? `http://localhost:${port}`).replace(
    /\/$/,
    '',
  );
  return {
    port,
    host: env.HOST || '0.0.0.0',
    dataDir: path.resolve(env.DATA_DIR || './data'),
    mongoUrl: url(env, 'MONGO_URL', ['mongodb:', 'mongodb+srv:']),
    mongoDb: env.MONGO_DB || 'nmdc',
    elasticsearchUrl: url(env, 'ELASTICSEARCH_URL', ['http:', 'https:']),
    elasticsearchIndexPrefix: env.ELASTICSEARCH_INDEX_PREFIX || 'nmdc',
    adminUsername,
    adminPassword,
    passwordMinLength: integer(env, 'PASSWORD_MIN_LENGTH', 12, 12, 128),
    demoData: boolean(env, 'DEMO_DATA', true),
    logLevel,
    publicUrl,
    tokenTtlSeconds: integer(env, 'TOKEN_TTL_SECONDS', 86400, 60, 365 * 86400),
    signingKeys: env.SIGNING_KEYS || undefined,
    externalOidc,
    maxBodyBytes: integer(env, 'MAX_BODY_BYTES', 1024 * 1024, 1024, 1024 * 1024 * 1024),
    workers: env.WORKERS === 'auto' ? os.availableParallelism() : integer(env, 'WORKERS', 1, 1, 64),
    corsOrigins: corsOrigins(env),
    workflowCatalog: env.WORKFLOW_CATALOG ? path.resolve(env.WORKFLOW_CATALOG) : undefined,
  };
}
