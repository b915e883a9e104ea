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
