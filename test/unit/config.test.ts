import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.ts';
import { isAllowedOrigin } from '../../src/http/cors.ts';

describe('WORKERS', () => {
  it('defaults to one process, takes a count or auto (one per core)', () => {
    expect(loadConfig({}).workers).toBe(1);
    expect(loadConfig({ WORKERS: '3' }).workers).toBe(3);
    expect(loadConfig({ WORKERS: 'auto' }).workers).toBe(os.availableParallelism());
  });

  it('refuses anything else, naming the variable', () => {
    for (const bad of ['0', '-1', '2.5', 'many', '65'])
      expect(() => loadConfig({ WORKERS: bad })).toThrow(
        new ConfigError(`WORKERS must be an integer between 1 and 64, got "${bad}"`),
      );
  });
});

describe('CORS_ORIGINS', () => {
  const allows = (env: Record<string, string>, origin: string) =>
    isAllowedOrigin(loadConfig(env).corsOrigins, origin);

  it("defaults to the original's rule: localhost on any port, microbiomedata.org subdomains, its GitHub pages", () => {
    for (const origin of [
      'http://localhost:3000',
      'http://localhost:8080',
      'https://data.microbiomedata.org',
      'https://a.b.microbiomedata.org',
      'https://microbiomedata.github.io',
    ])
      expect({ origin, allowed: allows({}, origin) }).toEqual({ origin, allowed: true });
    for (const origin of [
      'http://localhost',
      'https://localhost:3000',
      'http://127.0.0.1:3000',
      'http://data.microbiomedata.org',
      'https://microbiomedata.org',
      'https://data.microbiomedata.org.evil.example',
      'https://microbiomedata.github.io.evil.example',
      'https://evil.example/?https://microbiomedata.github.io',
    ])
      expect({ origin, allowed: allows({}, origin) }).toEqual({ origin, allowed: false });
  });

  it('takes a comma-separated list of exact origins', () => {
    const env = { CORS_ORIGINS: 'https://app.example.org, http://127.0.0.1:5173' };
    expect(loadConfig(env).corsOrigins).toEqual({
      kind: 'list',
      origins: ['https://app.example.org', 'http://127.0.0.1:5173'],
    });
    expect(allows(env, 'http://127.0.0.1:5173')).toBe(true);
    expect(allows(env, 'http://127.0.0.1:5174')).toBe(false);
    expect(allows(env, 'http://localhost:3000')).toBe(false);
  });

  it('takes a regular expression that must match the whole origin', () => {
    const env = { CORS_ORIGINS: 'https://[a-z]+\\.example\\.org' };
    expect(allows(env, 'https://app.example.org')).toBe(true);
    expect(allows(env, 'https://app.example.org.evil.example')).toBe(false);
    expect(allows(env, 'http://app.example.org')).toBe(false);
  });

  it('matches the Origin header on the linear-time engine, whatever the pattern', () => {
    // On a backtracking engine this pattern takes minutes over this origin.
    const env = { CORS_ORIGINS: 'https://(a+)+\\.example\\.org' };
    const started = performance.now();
    expect(allows(env, `https://${'a'.repeat(40)}!`)).toBe(false);
    expect(performance.now() - started).toBeLessThan(1000);
    expect(allows(env, 'https://aaa.example.org')).toBe(true);
  });

  it('refuses a pattern that does not compile, naming the variable', () => {
    expect(() => loadConfig({ CORS_ORIGINS: 'https://(unclosed' })).toThrow(
      /^CORS_ORIGINS must be a comma-separated list/,
    );
  });
});

describe('MongoDB settings', () => {
  it('refuses a standalone server unless MONGO_ALLOW_STANDALONE says otherwise, and bounds MONGO_MAX_TIME_MS', () => {
    expect(loadConfig({})).toMatchObject({ mongoAllowStandalone: false, mongoMaxTimeMs: 30_000 });
    expect(loadConfig({ MONGO_ALLOW_STANDALONE: 'true', MONGO_MAX_TIME_MS: '5000' })).toMatchObject({
      mongoAllowStandalone: true,
      mongoMaxTimeMs: 5000,
    });
    expect(() => loadConfig({ MONGO_ALLOW_STANDALONE: 'maybe' })).toThrow(
      /MONGO_ALLOW_STANDALONE must be true or false/,
    );
    expect(() => loadConfig({ MONGO_MAX_TIME_MS: '10' })).toThrow(
      /MONGO_MAX_TIME_MS must be an integer between 100/,
    );
  });
});

describe('TRUST_PROXY', () => {
  it('defaults to a proxy on the loopback interface', () => {
    expect(loadConfig({}).trustProxy).toEqual(['loopback']);
  });

  it('takes true, false, a number of hops, or a list of addresses, CIDR ranges and range names', () => {
    expect(loadConfig({ TRUST_PROXY: 'false' }).trustProxy).toBe(false);
    expect(loadConfig({ TRUST_PROXY: 'TRUE' }).trustProxy).toBe(true);
    expect(loadConfig({ TRUST_PROXY: '2' }).trustProxy).toBe(2);
    expect(loadConfig({ TRUST_PROXY: 'loopback, 10.0.0.0/8,fd00::/8, 192.0.2.7' }).trustProxy).toEqual([
      'loopback',
      '10.0.0.0/8',
      'fd00::/8',
      '192.0.2.7',
    ]);
  });

  it('refuses anything else, naming the variable and the items it did not understand', () => {
    for (const [raw, wrong] of [
      ['yes', 'yes'],
      ['10.0.0.0/33', '10.0.0.0/33'],
      ['loopback,proxy.example.org', 'proxy.example.org'],
      ['fd00::/129', 'fd00::/129'],
      ['10.0.0.1/8/8', '10.0.0.1/8/8'],
    ])
      expect(() => loadConfig({ TRUST_PROXY: raw! })).toThrow(
        new ConfigError(
          `TRUST_PROXY must be true, false, a number of hops, or a comma-separated list of addresses, CIDR ranges, loopback, linklocal, uniquelocal; not understood: ${wrong}`,
        ),
      );
  });
});

describe('Elasticsearch settings', () => {
  const FINGERPRINT =
    'A1:B2:C3:D4:E5:F6:07:18:29:3A:4B:5C:6D:7E:8F:90:A1:B2:C3:D4:E5:F6:07:18:29:3A:4B:5C:6D:7E:8F:90';

  it('takes one node or several, an API key, a CA file or a CA fingerprint, and a bulk size', () => {
    const config = loadConfig({
      ELASTICSEARCH_URL: 'https://es1:9200, https://es2:9200,https://es3:9200',
      ELASTICSEARCH_API_KEY: 'aWQ6a2V5',
      ELASTICSEARCH_CA_CERT: 'certs/http_ca.crt',
      ELASTICSEARCH_CA_FINGERPRINT: FINGERPRINT.toLowerCase(),
      ELASTICSEARCH_BULK_BYTES: '1048576',
    });
    expect(config.elasticsearchUrl).toBe('https://es1:9200,https://es2:9200,https://es3:9200');
    expect(config.elasticsearchApiKey).toBe('aWQ6a2V5');
    expect(config.elasticsearchCaCert).toBe(path.resolve('certs/http_ca.crt'));
    expect(config.elasticsearchCaFingerprint).toBe(FINGERPRINT.replace(/:/g, ''));
    expect(config.elasticsearchBulkBytes).toBe(1_048_576);
    expect(loadConfig({}).elasticsearchBulkBytes).toBe(8 * 1024 * 1024);
  });

  it('refuses a malformed fingerprint, CA settings without https, and mixed or bad URLs, naming the variable', () => {
    expect(() =>
      loadConfig({ ELASTICSEARCH_URL: 'https://es:9200', ELASTICSEARCH_CA_FINGERPRINT: 'abc' }),
    ).toThrow(/ELASTICSEARCH_CA_FINGERPRINT must be a SHA-256 fingerprint/);
    expect(() =>
      loadConfig({ ELASTICSEARCH_URL: 'http://es:9200', ELASTICSEARCH_CA_CERT: 'ca.crt' }),
    ).toThrow(
      new ConfigError(
        'ELASTICSEARCH_CA_CERT and ELASTICSEARCH_CA_FINGERPRINT need an https ELASTICSEARCH_URL',
      ),
    );
    expect(() => loadConfig({ ELASTICSEARCH_URL: 'https://es1:9200,http://es2:9200' })).toThrow(
      /ELASTICSEARCH_URL must list URLs of one scheme/,
    );
    expect(() => loadConfig({ ELASTICSEARCH_URL: 'es1:9200' })).toThrow(
      /ELASTICSEARCH_URL must use http: or https:/,
    );
    expect(() => loadConfig({ ELASTICSEARCH_BULK_BYTES: '100' })).toThrow(
      /ELASTICSEARCH_BULK_BYTES must be an integer between 65536 and 94371840/,
    );
  });

  it('reads the aggregation processes limits, refusing values no process could run with', () => {
    const defaults = loadConfig({});
    expect([defaults.aggregateMemoryMb, defaults.aggregateTimeLimitSeconds]).toEqual([1024, 60]);
    const set = loadConfig({ AGGREGATE_MEMORY_MB: '4096', AGGREGATE_TIME_LIMIT_SECONDS: '600' });
    expect([set.aggregateMemoryMb, set.aggregateTimeLimitSeconds]).toEqual([4096, 600]);
    for (const bad of ['32', '1e9', 'lots', '-1'])
      expect(() => loadConfig({ AGGREGATE_MEMORY_MB: bad })).toThrow(
        new ConfigError(`AGGREGATE_MEMORY_MB must be an integer between 64 and 65536, got "${bad}"`),
      );
    expect(() => loadConfig({ AGGREGATE_TIME_LIMIT_SECONDS: '0' })).toThrow(
      /AGGREGATE_TIME_LIMIT_SECONDS must be an integer between 1 and 86400/,
    );
  });
});

describe('WRITE_THREAD_NICE', () => {
  it('defaults to 10, takes 0 to 19, and refuses anything else', () => {
    expect(loadConfig({}).writeThreadNice).toBe(10);
    expect(loadConfig({ WRITE_THREAD_NICE: '0' }).writeThreadNice).toBe(0);
    expect(loadConfig({ WRITE_THREAD_NICE: '19' }).writeThreadNice).toBe(19);
    for (const bad of ['20', '-5', '2.5', 'low'])
      expect(() => loadConfig({ WRITE_THREAD_NICE: bad })).toThrow(
        new ConfigError(`WRITE_THREAD_NICE must be an integer between 0 and 19, got "${bad}"`),
      );
  });
});

describe('STORE_PREWARM', () => {
  it('defaults to reading the store file into the OS cache, and takes false', () => {
    expect(loadConfig({}).storePrewarm).toBe(true);
    expect(loadConfig({ STORE_PREWARM: 'false' }).storePrewarm).toBe(false);
    expect(() => loadConfig({ STORE_PREWARM: 'later' })).toThrow(
      new ConfigError('STORE_PREWARM must be true or false, got "later"'),
    );
  });
});
