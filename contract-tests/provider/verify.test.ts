/**
 * Provider verification: every pact in `pacts/` is replayed against the real service listening
 * on 127.0.0.1, one fresh service per pact. The consumer tests write the pacts; vitest runs them
 * first (the `pact-consumers` project has the lower group order in vitest.config.ts).
 */
import fs from 'node:fs';
import path from 'node:path';
import type { RequestHandler } from 'express';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Verifier } from '@pact-foundation/pact';
import { setBcryptCost } from '../../src/accounts/index.ts';
import { startTestServer, type TestServer } from '../../test/support/server.ts';
import { CONSUMER_1_2_0, CONSUMER_2_13_0, PACT_DIR, PROVIDER, pactFileOf } from '../contract-fixtures.ts';
import { providerStates, type ProviderSession } from './provider-states.ts';

setBcryptCost(4);

const pactFiles = fs.existsSync(PACT_DIR)
  ? fs
      .readdirSync(PACT_DIR)
      .filter((name) => name.endsWith(`-${PROVIDER}.json`))
      .map((name) => path.join(PACT_DIR, name))
  : [];

interface PactFile {
  consumer: { name: string };
  interactions: Array<{ description: string; providerStates?: Array<{ name: string }> }>;
}

const readPact = (file: string) => JSON.parse(fs.readFileSync(file, 'utf8')) as PactFile;

it('finds a pact of each SDK consumer in pacts/ (written by contract-tests/consumer first)', () => {
  expect(
    pactFiles.sort(),
    `no pact files in ${PACT_DIR}: run the consumer tests first (npx vitest run contract-tests)`,
  ).toEqual([pactFileOf(CONSUMER_1_2_0), pactFileOf(CONSUMER_2_13_0)].sort());
});

describe.each(pactFiles.map((file) => [path.basename(file), file]))('%s', (_name, file) => {
  let server: TestServer;
  const session: ProviderSession = { bearer: undefined };
  let states: ReturnType<typeof providerStates>;

  beforeAll(async () => {
    server = await startTestServer();
    states = providerStates(server, session);
  });
  afterAll(async () => server?.close());

  it('names only provider states the provider knows how to set up', () => {
    // The verifier only warns about a state without a handler; an unknown state must fail instead.
    const named = readPact(file).interactions.flatMap((i) => (i.providerStates ?? []).map((s) => s.name));
    expect(named.length).toBeGreaterThan(0);
    expect(named.filter((name) => !(name in states))).toEqual([]);
  });

  it(`is honoured by ${PROVIDER}`, async () => {
    // Consumers recorded an example token; the service only accepts the one the state signed in.
    const requestFilter: RequestHandler = (req, _res, next) => {
      // The verifier's proxy parses form bodies into objects and would forward them as JSON text.
      if (req.is('application/x-www-form-urlencoded') && req.body && !Buffer.isBuffer(req.body)) {
        const form = new URLSearchParams(req.body as Record<string, string>).toString();
        req.body = Buffer.from(form);
        req.headers['content-length'] = String(Buffer.byteLength(form));
      }
      if (req.headers.authorization?.startsWith('Bearer ') && session.bearer) {
        req.headers.authorization = `Bearer ${session.bearer}`;
      }
      next();
    };
    await new Verifier({
      provider: PROVIDER,
      providerBaseUrl: server.url,
      pactUrls: [file],
      stateHandlers: states,
      requestFilter,
      logLevel: 'warn',
    }).verifyProvider();
    expect(readPact(file).interactions.length).toBeGreaterThanOrEqual(19);
  });
});
