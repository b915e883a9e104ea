import os from 'node:os';
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

  it('refuses a pattern that does not compile, naming the variable', () => {
    expect(() => loadConfig({ CORS_ORIGINS: 'https://(unclosed' })).toThrow(
      /^CORS_ORIGINS must be a comma-separated list/,
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
