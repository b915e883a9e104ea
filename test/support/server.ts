/**
 * Test harness: the whole app on a fresh embedded store in a temporary folder, in-process
 * (`app` for supertest) or listening on 127.0.0.1 (`url` for SDKs and browsers).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { pino, type Logger } from 'pino';
import { loadConfig, type Config } from '../../src/config.ts';
import { buildApp, createServer } from '../../src/app.ts';
import { answerClientErrors } from '../../src/http/client-errors.ts';
import { openServices, type Services } from '../../src/services.ts';
import type { Adapters } from '../../src/adapters.ts';
import type express from 'express';
import request from 'supertest';
import { expect } from 'vitest';

/** The services of the app (built as `main.ts` builds them), the app, and its data folder. */
export interface TestApp extends Services {
  app: express.Express;
  dataDir: string;
  /** Stops the services and removes the data folder. */
  close(): Promise<void>;
}

export async function createTestApp(
  env: Record<string, string> = {},
  options: { logger?: Logger; adapters?: Adapters } = {},
): Promise<TestApp> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'nmdc-test-'));
  const config: Config = loadConfig({
    DEMO_DATA: 'false',
    LOG_LEVEL: 'silent',
    DATA_DIR: dataDir,
    HOST: '127.0.0.1',
    // Test files run side by side: a writing thread below their priority would wait for the other
    // files' work, not for this app's readers (write-thread.test.ts tests the nice value itself).
    WRITE_THREAD_NICE: '0',
    ...env,
  });
  const logger = options.logger ?? pino({ level: 'silent' });
  const services = await openServices(config, logger, { adapters: options.adapters });
  const app = buildApp(services);
  services.start();
  return {
    ...services,
    app,
    dataDir,
    close: async () => {
      await services.stop();
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

export interface TestServer extends TestApp {
  url: string;
  server: Server;
}

/** Listens on 127.0.0.1 on a free port; PUBLIC_URL is that address so token issuers match. */
export async function startTestServer(env: Record<string, string> = {}): Promise<TestServer> {
  // Reserve a port first so the issuer URL is known before the app is built.
  const probe = (await import('node:net')).createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const port = (probe.address() as AddressInfo).port;
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  const url = `http://127.0.0.1:${port}`;
  const testApp = await createTestApp({ PORT: String(port), PUBLIC_URL: url, ...env });
  // As the service listens (src/main.ts).
  const server = await new Promise<Server>((resolve) => {
    const s = createServer(testApp.app).listen(port, '127.0.0.1', () => resolve(s));
  });
  answerClientErrors(server);
  return {
    ...testApp,
    url,
    server,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await testApp.close();
    },
  };
}

/** Logs in with a password through `POST /token` (200 expected) and returns the access token. */
export async function passwordToken(
  app: express.Express,
  username: string,
  password: string,
): Promise<string> {
  const res = await request(app)
    .post('/token')
    .type('form')
    .send({ grant_type: 'password', username, password });
  expect(res.status, res.text).toBe(200);
  return res.body.access_token as string;
}

export interface SiteClientLogin {
  clientId: string;
  /** `Authorization` header of the logged-in site client. */
  client: { Authorization: string };
}

/**
 * Creates site `siteId` as the caller of `ownerAuth` (who becomes its administrator), generates
 * client credentials for it and logs the client in (`grant_type=client_credentials`).
 */
export async function newSiteClient(
  app: express.Express,
  ownerAuth: Record<string, string>,
  siteId: string,
  capabilityIds?: string[],
): Promise<SiteClientLogin> {
  const site = await request(app)
    .post('/sites')
    .set(ownerAuth)
    .send(capabilityIds ? { id: siteId, capability_ids: capabilityIds } : { id: siteId });
  expect(site.status, site.text).toBe(201);
  const credentials = await request(app).post(`/sites/${siteId}:generateCredentials`).set(ownerAuth);
  expect(credentials.status, credentials.text).toBe(200);
  const login = await request(app)
    .post('/token')
    .type('form')
    .send({ grant_type: 'client_credentials', ...credentials.body });
  expect(login.status, login.text).toBe(200);
  return {
    clientId: credentials.body.client_id as string,
    client: { Authorization: `Bearer ${login.body.access_token}` },
  };
}
