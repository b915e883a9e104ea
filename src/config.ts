/**
 * Every environment variable the service reads, parsed and typed in one place.
 * An invalid value stops start-up with a message naming the variable.
 */
import net from 'node:net';
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
  /**
   * Run on a standalone `mongod` (no transactions: concurrent writes to one record may lose
   * updates). `MONGO_ALLOW_STANDALONE`, default false: the service refuses to start on one.
   */
  mongoAllowStandalone: boolean;
  /**
   * Time limit of every user-driven MongoDB operation (`maxTimeMS`), of a transaction's commit
   * and of a majority's acknowledgement of a write, in milliseconds. `MONGO_MAX_TIME_MS`, default
   * 30000.
   */
  mongoMaxTimeMs: number;
  /**
   * Elasticsearch URL, or several nodes' URLs comma-separated; when set Elasticsearch is the search
   * index. `ELASTICSEARCH_URL` (`https://user:password@host:9200` for basic authentication).
   */
  elasticsearchUrl: string | undefined;
  /** Prefix of the Elasticsearch index names. `ELASTICSEARCH_INDEX_PREFIX`, default `nmdc`. */
  elasticsearchIndexPrefix: string;
  /** An Elasticsearch API key, in its encoded form (base64 of `id:key`). `ELASTICSEARCH_API_KEY`. */
  elasticsearchApiKey: string | undefined;
  /** A PEM file of the CA that signed Elasticsearch's HTTP certificate. `ELASTICSEARCH_CA_CERT`. */
  elasticsearchCaCert: string | undefined;
  /**
   * The SHA-256 fingerprint of that CA certificate (hex, colons optional), trusted instead of a
   * CA file, as Elasticsearch 8 prints it at first start. `ELASTICSEARCH_CA_FINGERPRINT`.
   */
  elasticsearchCaFingerprint: string | undefined;
  /** Largest `_bulk` request body the index sends, in bytes. `ELASTICSEARCH_BULK_BYTES`, default 8 MiB. */
  elasticsearchBulkBytes: number;
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
  /** `LOG_FORMAT`: `json`, `pretty` (readable lines), or `auto` (the default: pretty on a terminal). */
  logFormat: LogFormat;
  /**
   * Public base URL of this service: the issuer every token names, the base of the discovery
   * document's endpoints and of sign-in redirects. `PUBLIC_URL`, default `http://localhost:8080`
   * whatever `PORT` is, so a token stays good when the port changes.
   */
  publicUrl: string;
  /** True when `PUBLIC_URL` was not set (the default above is in use). */
  publicUrlIsDefault: boolean;
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
  /**
   * Which proxies in front of the service are believed when they name the client's address in
   * `X-Forwarded-For` (the address login limits count by, and logs show). `TRUST_PROXY`: a
   * comma-separated list of addresses, CIDR ranges and the names `loopback`, `linklocal` and
   * `uniquelocal`; a number of proxy hops; or `false` (the connection's own address is the
   * client's). Default `loopback`, for a proxy on the same machine. `true` believes any sender,
   * which lets clients choose their own address: only behind a proxy that overwrites the header.
   */
  trustProxy: boolean | number | string[];
  /**
   * Check every answer against the contract before it is sent (a mismatch is a 500 naming it).
   * `VALIDATE_RESPONSES`, default true, except with `NODE_ENV=production`, where each answer
   * would pay for it: there the contract is held by the tests, which run with it on.
   */
  validateResponses: boolean;
  /**
   * Answer the hot read-only GETs (a record by id, a listing, the version) by a shorter way
   * through the app, with the same answers (src/http/fast-path.ts). `FAST_PATH`, default true.
   */
  fastPath: boolean;
  /**
   * Read the embedded store's file into the OS page cache in the background as the service starts,
   * unless it is cached already or larger than half the available memory
   * (src/store/sqlite/prewarm.ts). `STORE_PREWARM`, default true.
   */
  storePrewarm: boolean;
  /**
   * Run the embedded store's large atomic writes (a submission) on a thread of their own, so the
   * service keeps answering meanwhile (src/store/sqlite/write-thread.ts). `WRITE_THREAD`, default true.
   */
  writeThread: boolean;
  /**
   * The nice value (0-19) the writing thread runs at, and the threads it starts (the search index's
   * preparing workers inherit it): a large write then takes the CPU the threads answering requests
   * leave, instead of sharing it with them. 0 leaves them as the process is. `WRITE_THREAD_NICE`,
   * default 10.
   */
  writeThreadNice: number;
  /**
   * The heap of each process aggregation pipelines run in, MiB (src/metadata/pipeline-processes.ts):
   * a pipeline that needs more is a 422. `AGGREGATE_MEMORY_MB`, default 1024.
   */
  aggregateMemoryMb: number;
  /** How long one aggregation pipeline may run, seconds (a 422 beyond). `AGGREGATE_TIME_LIMIT_SECONDS`, default 60. */
  aggregateTimeLimitSeconds: number;
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

/** `PUBLIC_URL` when it is not set: the issuer does not follow `PORT` (tokens would stop working). */
export const DEFAULT_PUBLIC_URL = 'http://localhost:8080';

/** How logs are written: JSON lines, readable lines (pino-pretty), or readable on a terminal only. */
export const LOG_FORMATS = ['auto', 'json', 'pretty'] as const;
export type LogFormat = (typeof LOG_FORMATS)[number];

const PROXY_RANGE_NAMES = ['loopback', 'linklocal', 'uniquelocal'];

/** An address or CIDR range (`10.0.0.0/8`, `fd00::/8`). */
function isAddressOrRange(text: string): boolean {
  const [address, prefix, ...rest] = text.split('/');
  const family = net.isIP(address ?? '');
  if (family === 0 || rest.length > 0) return false;
  if (prefix === undefined) return true;
  const bits = Number(prefix);
  return /^\d{1,3}$/.test(prefix) && bits <= (family === 4 ? 32 : 128);
}

function trustProxy(env: NodeJS.ProcessEnv): Config['trustProxy'] {
  const raw = env.TRUST_PROXY?.trim();
  if (raw === undefined || raw === '') return ['loopback'];
  if (/^(true|false)$/i.test(raw)) return raw.toLowerCase() === 'true';
  if (/^\d{1,2}$/.test(raw)) return Number(raw);
  const items = raw.split(',').map((item) => item.trim());
  const wrong = items.filter((item) => !PROXY_RANGE_NAMES.includes(item) && !isAddressOrRange(item));
  if (wrong.length > 0) {
    throw new ConfigError(
      `TRUST_PROXY must be true, false, a number of hops, or a comma-separated list of addresses, CIDR ranges, ${PROXY_RANGE_NAMES.join(', ')}; not understood: ${wrong.join(', ')}`,
    );
  }
  return items;
}

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

/** One URL, or several comma-separated (Elasticsearch nodes), each http or https. */
function urls(env: NodeJS.ProcessEnv, name: string): string | undefined {
  const raw = env[name];
  if (raw === undefined || raw.trim() === '') return undefined;
  const parts = raw.split(',').map((part) => part.trim());
  for (const part of parts) url({ [name]: part }, name, ['http:', 'https:']);
  const schemes = new Set(parts.map((part) => new URL(part).protocol));
  if (schemes.size > 1) throw new ConfigError(`${name} must list URLs of one scheme, got "${raw}"`);
  return parts.join(',');
}

function elasticsearchTls(env: NodeJS.ProcessEnv, elasticsearchUrl: string | undefined) {
  const caCert = env.ELASTICSEARCH_CA_CERT ? path.resolve(env.ELASTICSEARCH_CA_CERT) : undefined;
  const rawFingerprint = env.ELASTICSEARCH_CA_FINGERPRINT?.trim() || undefined;
  const caFingerprint = rawFingerprint?.replace(/:/g, '').toUpperCase();
  if (caFingerprint !== undefined && !/^[0-9A-F]{64}$/.test(caFingerprint))
    throw new ConfigError(
      `ELASTICSEARCH_CA_FINGERPRINT must be a SHA-256 fingerprint (64 hexadecimal digits, colons optional), got "${rawFingerprint}"`,
    );
  if ((caCert || caFingerprint) && !elasticsearchUrl?.startsWith('https:'))
    throw new ConfigError(
      'ELASTICSEARCH_CA_CERT and ELASTICSEARCH_CA_FINGERPRINT need an https ELASTICSEARCH_URL',
    );
  return { caCert, caFingerprint };
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const port = integer(env, 'PORT', 8080, 0, 65535);
  const logLevel = env.LOG_LEVEL || 'info';
  if (!LOG_LEVELS.includes(logLevel)) {
    throw new ConfigError(`LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}, got "${logLevel}"`);
  }
  const logFormat = (env.LOG_FORMAT || 'auto') as LogFormat;
  if (!LOG_FORMATS.includes(logFormat)) {
    throw new ConfigError(`LOG_FORMAT must be one of ${LOG_FORMATS.join(', ')}, got "${logFormat}"`);
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
  const elasticsearchUrl = urls(env, 'ELASTICSEARCH_URL');
  const elasticsearchCa = elasticsearchTls(env, elasticsearchUrl);
  const configuredUrl = url(env, 'PUBLIC_URL', ['http:', 'https:']);
  const publicUrl = (configuredUrl ?? DEFAULT_PUBLIC_URL).replace(/\/$/, '');
  return {
    port,
    host: env.HOST || '0.0.0.0',
    dataDir: path.resolve(env.DATA_DIR || './data'),
    mongoUrl: url(env, 'MONGO_URL', ['mongodb:', 'mongodb+srv:']),
    mongoDb: env.MONGO_DB || 'nmdc',
    mongoAllowStandalone: boolean(env, 'MONGO_ALLOW_STANDALONE', false),
    mongoMaxTimeMs: integer(env, 'MONGO_MAX_TIME_MS', 30_000, 100, 3_600_000),
    elasticsearchUrl,
    elasticsearchIndexPrefix: env.ELASTICSEARCH_INDEX_PREFIX || 'nmdc',
    elasticsearchApiKey: env.ELASTICSEARCH_API_KEY || undefined,
    elasticsearchCaCert: elasticsearchCa.caCert,
    elasticsearchCaFingerprint: elasticsearchCa.caFingerprint,
    elasticsearchBulkBytes: integer(
      env,
      'ELASTICSEARCH_BULK_BYTES',
      8 * 1024 * 1024,
      64 * 1024,
      90 * 1024 * 1024,
    ),
    adminUsername,
    adminPassword,
    passwordMinLength: integer(env, 'PASSWORD_MIN_LENGTH', 12, 12, 128),
    demoData: boolean(env, 'DEMO_DATA', true),
    logLevel,
    logFormat,
    publicUrl,
    publicUrlIsDefault: configuredUrl === undefined,
    tokenTtlSeconds: integer(env, 'TOKEN_TTL_SECONDS', 86400, 60, 365 * 86400),
    signingKeys: env.SIGNING_KEYS || undefined,
    externalOidc,
    maxBodyBytes: integer(env, 'MAX_BODY_BYTES', 1024 * 1024, 1024, 1024 * 1024 * 1024),
    workers: env.WORKERS === 'auto' ? os.availableParallelism() : integer(env, 'WORKERS', 1, 1, 64),
    corsOrigins: corsOrigins(env),
    workflowCatalog: env.WORKFLOW_CATALOG ? path.resolve(env.WORKFLOW_CATALOG) : undefined,
    trustProxy: trustProxy(env),
    validateResponses: boolean(env, 'VALIDATE_RESPONSES', env.NODE_ENV !== 'production'),
    fastPath: boolean(env, 'FAST_PATH', true),
    storePrewarm: boolean(env, 'STORE_PREWARM', true),
    writeThread: boolean(env, 'WRITE_THREAD', true),
    writeThreadNice: integer(env, 'WRITE_THREAD_NICE', 10, 0, 19),
    aggregateMemoryMb: integer(env, 'AGGREGATE_MEMORY_MB', 1024, 64, 64 * 1024),
    aggregateTimeLimitSeconds: integer(env, 'AGGREGATE_TIME_LIMIT_SECONDS', 60, 1, 24 * 3600),
  };
}

/**
 * What start-up warns about the public URL: left at its default while the service listens on
 * another port, discovery and sign-in redirects name a port nobody listens on.
 */
export function publicUrlWarning(
  config: Pick<Config, 'publicUrl' | 'publicUrlIsDefault' | 'port'>,
): string | undefined {
  if (!config.publicUrlIsDefault || config.port === 8080) return undefined;
  return (
    `PUBLIC_URL is not set, so the service names itself ${config.publicUrl} (the token issuer, and the base of ` +
    `the discovery document and sign-in redirects) while it listens on port ${config.port}: set PUBLIC_URL to the ` +
    `address clients use, e.g. PUBLIC_URL=http://localhost:${config.port}. Tokens issued under one PUBLIC_URL are ` +
    'refused under another.'
  );
}
