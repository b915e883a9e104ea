/**
 * Browser apps on other origins, in a real headless Chromium: a page served from
 * http://localhost:<port> (inside the default CORS rule) calls the service on 127.0.0.1 with the
 * generated 2.13.0 SDK (a find, a password login, `/users/me`, a credentialed fetch); the same
 * page served from http://127.0.0.1:<port> (outside the rule) is refused by the browser.
 */
import path from 'node:path';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { build } from 'esbuild';
import type { Browser, Page } from 'playwright-core';
import { Accounts, setBcryptCost } from '../../src/accounts/index.ts';
import { startTestServer, type TestServer } from '../support/server.ts';
import { launchChromium } from './chromium.ts';

setBcryptCost(4);

const USER = { username: 'cors-researcher', password: 'cors-researcher-password-1' };
const BIOSAMPLES = [1, 2, 3, 4].map((n) => ({
  id: `nmdc:bsm-11-cors000${n}`,
  type: 'nmdc:Biosample',
  name: `Cross-origin soil core ${n}`,
  ecosystem_category: n % 2 ? 'Plants' : 'Terrestrial',
}));

/** What the page does with the SDK; it reports each step's outcome instead of throwing. */
const PAGE_SCRIPT = `
import { createNmdcClient } from '/sdk.js';
const report = {};
const step = async (name, run) => {
  try { report[name] = await run(); } catch (err) { report[name] = { thrown: String(err && err.message || err) }; }
};
// The SDK answers a network failure (such as a CORS refusal) as an error without a response.
const answered = (result) => {
  if (!result.response) throw result.error;
  return result;
};
const params = new URLSearchParams(location.search);
const nmdc = createNmdcClient({ baseUrl: params.get('api') });
await step('find', async () => {
  const { data, response } = answered(
    await nmdc.findBiosamples({ query: { filter: 'ecosystem_category:Plants', per_page: 10 } }),
  );
  return { status: response.status, ids: data.results.map((r) => r.id), count: data.meta.count };
});
await step('login', async () => {
  const { data, response } = answered(
    await nmdc.login({
      body: { grant_type: 'password', username: params.get('user'), password: params.get('password') },
    }),
  );
  nmdc.setToken(data.access_token);
  return { status: response.status, token_type: data.token_type, requestId: response.headers.get('x-request-id') !== null };
});
await step('me', async () => {
  const { data, response } = answered(await nmdc.getCurrentUser());
  return { status: response.status, username: data.username };
});
await step('credentialed', async () => {
  const response = await fetch(params.get('api') + '/version', { credentials: 'include' });
  return { status: response.status, schema: (await response.json())['nmdc-schema'] };
});
window.__report = report;
`;

let service: TestServer;
let pages: Server;
let pagesPort: number;
let browser: Browser;

beforeAll(async () => {
  service = await startTestServer();
  const accounts = new Accounts(service.store);
  await accounts.createUser(USER);
  await service.store.upsertMany('biosample_set', BIOSAMPLES);
  await service.searchIndex.index('biosample_set', BIOSAMPLES);

  const bundle = await build({
    entryPoints: [path.resolve('generated/sdk-2.13.0/index.ts')],
    bundle: true,
    format: 'esm',
    platform: 'browser',
    target: 'chrome120',
    write: false,
    logLevel: 'silent',
  });
  const sdkJs = bundle.outputFiles[0]!.text;
  pages = createServer((req, res) => {
    if (req.url === '/sdk.js') {
      res.writeHead(200, { 'content-type': 'text/javascript' }).end(sdkJs);
    } else if (req.url?.startsWith('/app.html')) {
      res
        .writeHead(200, { 'content-type': 'text/html' })
        .end(`<!doctype html><title>app</title><script type="module">${PAGE_SCRIPT}</script>`);
    } else {
      res.writeHead(404).end();
    }
  });
  await new Promise<void>((resolve) => pages.listen(0, '127.0.0.1', resolve));
  pagesPort = (pages.address() as AddressInfo).port;
  browser = await launchChromium();
});

afterAll(async () => {
  await browser?.close();
  await new Promise((resolve) => pages?.close(resolve));
  await service?.close();
});

async function runApp(origin: string): Promise<{ report: Record<string, any>; console: string[] }> {
  const page: Page = await (await browser.newContext()).newPage();
  const messages: string[] = [];
  page.on('console', (m) => messages.push(m.text()));
  const query = new URLSearchParams({ api: service.url, user: USER.username, password: USER.password });
  await page.goto(`${origin}/app.html?${query}`);
  await page.waitForFunction(() => (window as any).__report !== undefined, undefined, { timeout: 15_000 });
  const report = await page.evaluate(() => (window as any).__report);
  await page.context().close();
  return { report, console: messages };
}

describe('a browser app on another origin', () => {
  it('inside the CORS rule finds, logs in and reads /users/me with the generated SDK', async () => {
    const { report } = await runApp(`http://localhost:${pagesPort}`);
    expect(report).toEqual({
      find: { status: 200, ids: ['nmdc:bsm-11-cors0001', 'nmdc:bsm-11-cors0003'], count: 2 },
      login: { status: 200, token_type: 'bearer', requestId: true },
      me: { status: 200, username: USER.username },
      credentialed: { status: 200, schema: expect.any(String) },
    });
  });

  it('outside the CORS rule is refused by the browser', async () => {
    const { report, console } = await runApp(`http://127.0.0.1:${pagesPort}`);
    for (const step of ['find', 'login', 'me', 'credentialed']) {
      expect(report[step]).toEqual({ thrown: 'Failed to fetch' });
    }
    expect(console.join('\n')).toMatch(/has been blocked by CORS policy/);
  });
});
