/**
 * The auth routes alone (provider, /token, users, sites, allowances, a private probe route), built
 * on the app's services over a real embedded store, listening on 127.0.0.1. The DATA_DIR can be
 * reused to test restarts.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { createServer, type Server } from 'node:http';
import express from 'express';
import { pino } from 'pino';
import { loadConfig, type Config } from '../../src/config.ts';
import { openServices } from '../../src/services.ts';
import { errorHandler } from '../../src/http/error-handler.ts';
import { guardsOf } from '../../src/http/guards.ts';
import { NotFound } from '../../src/errors.ts';
import type { Principal } from '../../src/accounts/principal.ts';
import { browserFlowsRouter } from '../../src/auth/browser-routes.ts';
import { authRouter } from '../../src/auth/routes.ts';
import { accountsRouter } from '../../src/accounts/routes.ts';
import { allowancesRouter } from '../../src/accounts/allowance-routes.ts';
import { siteClientsRouter } from '../../src/accounts/site-client-routes.ts';
import type { DocumentStore } from '../../src/store/port.ts';

export interface AuthServer {
  url: string;
  config: Config;
  store: DocumentStore;
  dataDir: string;
  /** Stops the server; keeps DATA_DIR unless `removeData`. */
  close(options?: { removeData?: boolean }): Promise<void>;
}

export async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as AddressInfo;
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return port;
}

export async function startAuthServer(
  env: Record<string, string> = {},
  reuse: { dataDir?: string; port?: number } = {},
): Promise<AuthServer> {
  const dataDir = reuse.dataDir ?? fs.mkdtempSync(path.join(os.tmpdir(), 'nmdc-auth-'));
  const port = reuse.port ?? (await freePort());
  const url = `http://127.0.0.1:${port}`;
  const config = loadConfig({
    DEMO_DATA: 'false',
    LOG_LEVEL: 'silent',
    DATA_DIR: dataDir,
    HOST: '127.0.0.1',
    PORT: String(port),
    PUBLIC_URL: url,
    ...env,
  });
  const logger = pino({ level: 'silent' });
  const services = await openServices(config, logger);
  const { store } = services;
  const app = express();
  app.set('trust proxy', config.trustProxy);
  app.use(browserFlowsRouter(services));
  app.use(express.json());
  app.use(express.urlencoded({ extended: false }));
  app.use(authRouter(services));
  app.use(accountsRouter(services));
  app.use(allowancesRouter(services));
  app.use(siteClientsRouter(services));
  app.get('/private/whoami', guardsOf(services.auth).requireUser, (_req, res) => {
    res.json(res.locals.principal as Principal);
  });
  app.use(() => {
    throw new NotFound();
  });
  app.use(errorHandler);
  const server: Server = await new Promise((resolve) => {
    const s = app.listen(port, '127.0.0.1', () => resolve(s));
  });
  return {
    url,
    config,
    store,
    dataDir,
    close: async (options = {}) => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      // Lets fetch in this process see its pooled connections end, so a server restarted on the
      // same port is not sent a request on a socket the old one closed.
      await new Promise((resolve) => setImmediate(resolve));
      await services.stop();
      if (options.removeData !== false) fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** Form-encoded POST /token. */
export async function postToken(
  url: string,
  form: Record<string, string>,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: Record<string, unknown>; headers: Headers }> {
  const response = await fetch(`${url}/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
    body: new URLSearchParams(form).toString(),
  });
  return {
    status: response.status,
    body: (await response.json()) as Record<string, unknown>,
    headers: response.headers,
  };
}

export async function passwordToken(url: string, username: string, password: string): Promise<string> {
  const { status, body } = await postToken(url, { grant_type: 'password', username, password });
  if (status !== 200) throw new Error(`login failed: ${status} ${JSON.stringify(body)}`);
  return body.access_token as string;
}

export async function getJson(
  url: string,
  token?: string,
): Promise<{ status: number; body: Record<string, unknown>; headers: Headers }> {
  const response = await fetch(url, { headers: token ? { authorization: `Bearer ${token}` } : {} });
  const text = await response.text();
  return {
    status: response.status,
    body: text ? (JSON.parse(text) as Record<string, unknown>) : {},
    headers: response.headers,
  };
}

export async function postJson(
  url: string,
  body: unknown,
  token?: string,
): Promise<{ status: number; body: Record<string, unknown>; text: string }> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: JSON.stringify(body),
  });
  const text = await response.text();
  return { status: response.status, body: text ? (JSON.parse(text) as Record<string, unknown>) : {}, text };
}
