/**
 * The docs page in a real headless Chromium: the version selector, the three logins of the
 * Authorize dialog (password, site client, ORCID through a test external issuer on 127.0.0.1),
 * the Workflow management group, and "Try it out" calls whose responses the page shows.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Locator, Page } from 'playwright-core';
import { Accounts, setBcryptCost } from '../../src/accounts/index.ts';
import { startTestServer, type TestServer } from '../support/server.ts';
import { freePort } from '../auth/auth-server.ts';
import { JOBS } from '../../src/workflows/jobs.ts';
import { launchChromium } from './chromium.ts';
import {
  EXTERNAL_CLIENT_ID,
  EXTERNAL_CLIENT_SECRET,
  RESEARCHER_ORCID,
  startExternalIssuer,
  type ExternalIssuer,
} from '../auth/external-issuer.ts';

setBcryptCost(4);

const SCREENSHOTS = path.resolve('artifacts', 'screenshots');
const USER = { username: 'docs-researcher', password: 'docs-researcher-password-1' };
const SITE_ID = 'docs-lab';
const BIOSAMPLES = [1, 2, 3].map((n) => ({
  id: `nmdc:bsm-11-docs000${n}`,
  type: 'nmdc:Biosample',
  name: `Docs page soil core ${n}`,
}));

let service: TestServer;
let issuer: ExternalIssuer;
let browser: Browser;
let page: Page;
let siteClient: { client_id: string; client_secret: string };

beforeAll(async () => {
  const issuerPort = await freePort();
  service = await startTestServer({
    EXTERNAL_OIDC_ISSUER: `http://127.0.0.1:${issuerPort}`,
    EXTERNAL_OIDC_CLIENT_ID: EXTERNAL_CLIENT_ID,
    EXTERNAL_OIDC_CLIENT_SECRET: EXTERNAL_CLIENT_SECRET,
  });
  issuer = await startExternalIssuer(service.url, issuerPort);
  const accounts = new Accounts(service.store);
  const user = await accounts.createUser(USER);
  await accounts.createSite(SITE_ID, [], USER.username);
  siteClient = await accounts.generateSiteCredentials(SITE_ID, (await accounts.getUser(user.username))!);
  await service.store.upsertMany('biosample_set', BIOSAMPLES);
  await service.searchIndex.index('biosample_set', BIOSAMPLES);
  fs.mkdirSync(SCREENSHOTS, { recursive: true });

  browser = await launchChromium();
  page = await (await browser.newContext({ viewport: { width: 1280, height: 1000 } })).newPage();
  page.setDefaultTimeout(10_000);
});

afterAll(async () => {
  await browser?.close();
  await service?.close();
  await issuer?.close();
});

const authorizeButton = () => page.locator('.scheme-container button.authorize:not(.modal-btn)');
const dialog = () => page.locator('.modal-ux');
/** A login section of the Authorize dialog, by security scheme; it shows the scheme's description. */
const loginSection = (scheme: string) =>
  dialog()
    .locator('.auth-container')
    .filter({ has: page.locator('h4', { hasText: new RegExp(`^${scheme}\\b`) }) });

async function openAuthorize(): Promise<void> {
  await authorizeButton().click();
  await dialog().waitFor();
}

async function closeAuthorize(): Promise<void> {
  await dialog().locator('button.btn-done').first().click();
  await dialog().waitFor({ state: 'detached' });
}

/**
 * Expands an operation, presses "Try it out" (filling in the given path and query parameters and
 * editing its JSON body if given) and "Execute".
 */
async function tryItOut(
  method: string,
  apiPath: string,
  body?: unknown,
  parameters: Record<string, string> = {},
): Promise<Locator> {
  const operation = page.locator(`.opblock-${method}`).filter({
    has: page.locator(`.opblock-summary-path[data-path="${apiPath}"]`),
  });
  if ((await operation.locator('.opblock-body').count()) === 0) {
    await operation.locator('.opblock-summary').first().click();
  }
  const tryButton = operation.locator('button.try-out__btn');
  if ((await tryButton.textContent())?.includes('Try it out')) await tryButton.click();
  for (const [name, value] of Object.entries(parameters)) {
    await operation.locator(`tr[data-param-name="${name}"] input`).fill(value);
  }
  if (body !== undefined) await operation.locator('textarea.body-param__text').fill(JSON.stringify(body));
  await operation.locator('button.execute').click();
  const response = operation.locator('.live-responses-table .response').first();
  await response.locator('.response-col_status').waitFor();
  return response;
}

async function responseJson(response: Locator): Promise<{ status: string; body: any }> {
  const status = (await response.locator('.response-col_status').textContent())!.trim();
  const text = await response
    .locator('.response-col_description pre.microlight, .response-col_description pre')
    .first()
    .textContent();
  return { status, body: JSON.parse(text!) };
}

describe('the docs page in Chromium', () => {
  it('switches to the 1.2.0 document with its find, metadata and queries groups and the ORCID link, and back', async () => {
    await page.goto(`${service.url}/docs`);
    await expect
      .poll(() => page.locator('.opblock-tag').allTextContents())
      .toEqual(expect.arrayContaining([expect.stringContaining('Metadata access')]));
    await page.locator('.topbar select').selectOption({ label: '1.2.0' });
    await page.locator('.info .version', { hasText: '1.2.0' }).waitFor();
    const groups = (await page.locator('.opblock-tag').allTextContents()).map((t) => t.toLowerCase());
    for (const group of ['find', 'metadata', 'queries']) {
      expect(groups.some((g) => g.startsWith(group))).toBe(true);
    }
    const orcid = page.locator('.info a', { hasText: 'Sign in with ORCID' });
    expect(await orcid.getAttribute('href')).toBe('/login/external');
    expect(await page.locator('.opblock-summary-path[data-path="/activities"]').count()).toBe(1);

    await page.locator('.topbar select').selectOption({ label: '2.13.0' });
    await page.locator('.info .version', { hasText: '2.13.0' }).waitFor();
    expect(await page.locator('.opblock-summary-path[data-path="/planned_processes"]').count()).toBe(1);
  });

  it('logs in with a password in the Authorize dialog and shows the user from GET /users/me', async () => {
    await openAuthorize();
    const section = loginSection('userLogin');
    expect(await dialog().locator('.auth-container h4').allTextContents()).toEqual(
      expect.arrayContaining([
        expect.stringContaining('userLogin'),
        expect.stringContaining('siteClientLogin'),
        expect.stringContaining('orcidLogin'),
      ]),
    );
    await section.locator('#oauth_username').fill(USER.username);
    await section.locator('#oauth_password').fill(USER.password);
    await page.screenshot({ path: path.join(SCREENSHOTS, 'authorize-dialog.png') });
    await section.locator('button.authorize').click();
    await section.locator('button', { hasText: 'Logout' }).waitFor();
    await closeAuthorize();

    const { status, body } = await responseJson(await tryItOut('get', '/users/me'));
    expect(status).toBe('200');
    expect(body).toMatchObject({ username: USER.username, site_admin: [SITE_ID] });
    await page.screenshot({ path: path.join(SCREENSHOTS, 'users-me-response.png'), fullPage: false });

    await openAuthorize();
    await loginSection('userLogin').locator('button', { hasText: 'Logout' }).click();
    await loginSection('userLogin').locator('#oauth_username').waitFor();
    await closeAuthorize();
  });

  it('logs in as a site client and runs a find at POST /queries:run', async () => {
    await openAuthorize();
    const section = loginSection('siteClientLogin');
    await section.locator('input[id^="client_id"]').fill(siteClient.client_id);
    await section.locator('input[id^="client_secret"]').fill(siteClient.client_secret);
    await section.locator('button.authorize').click();
    await section.locator('button', { hasText: 'Logout' }).waitFor();
    await closeAuthorize();

    const response = await tryItOut('post', '/queries:run', {
      find: 'biosample_set',
      filter: {},
      batchSize: 2,
    });
    const { status, body } = await responseJson(response);
    expect(status).toBe('200');
    expect(body.ok).toBe(1);
    expect(body.cursor.firstBatch.map((b: { id: string }) => b.id)).toEqual([
      BIOSAMPLES[0]!.id,
      BIOSAMPLES[1]!.id,
    ]);
    await page.screenshot({ path: path.join(SCREENSHOTS, 'queries-run-response.png') });

    await openAuthorize();
    await loginSection('siteClientLogin').locator('button', { hasText: 'Logout' }).click();
    await closeAuthorize();
  });

  it('shows the Workflow management group, and a site client claims a job through "Try it out"', async () => {
    const job = {
      id: 'nmdc:sys0docs00000j01',
      workflow: { id: 'metag-1.0.0' },
      config: { git_repo: 'https://github.com/microbiomedata/metaG', release: 'v1.0.0' },
      claims: [],
      created_at: new Date().toISOString(),
    };
    await service.store.upsertMany(JOBS, [job]);

    const group = page.locator('.opblock-tag-section').filter({
      has: page.locator('.opblock-tag', { hasText: /^Workflow management/ }),
    });
    await group.waitFor();
    const operationsShown = async () =>
      (await group.locator('.opblock-summary').allTextContents()).map((t) => t.replace(/\s+/g, ' '));
    for (const [method, apiPath] of [
      ['post', '/jobs/{job_id}:claim'],
      ['post', '/jobs/{job_id}:release'],
      ['get', '/operations/{op_id}'],
      ['patch', '/operations/{op_id}'],
    ] as const) {
      const operation = group
        .locator(`.opblock-${method}`)
        .filter({ has: page.locator(`.opblock-summary-path[data-path="${apiPath}"]`) });
      expect(
        await operation.count(),
        `${method} ${apiPath} in ${(await operationsShown()).join(' | ')}`,
      ).toBe(1);
    }

    await openAuthorize();
    const section = loginSection('siteClientLogin');
    await section.locator('input[id^="client_id"]').fill(siteClient.client_id);
    await section.locator('input[id^="client_secret"]').fill(siteClient.client_secret);
    await section.locator('button.authorize').click();
    await section.locator('button', { hasText: 'Logout' }).waitFor();
    await closeAuthorize();

    const response = await tryItOut('post', '/jobs/{job_id}:claim', undefined, { job_id: job.id });
    const { status, body } = await responseJson(response);
    expect(status).toBe('200');
    expect(body).toMatchObject({
      id: expect.stringMatching(/^nmdc:sys0/),
      done: false,
      expire_time: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
      metadata: { job: { id: job.id, workflow: job.workflow, config: job.config }, site_id: SITE_ID },
    });
    // The claim the page made is the job's claim in the store.
    expect((await service.store.getById(JOBS, job.id))?.claims).toEqual([
      { op_id: body.id, site_id: SITE_ID },
    ]);
    await response.scrollIntoViewIfNeeded();
    await page.screenshot({ path: path.join(SCREENSHOTS, 'jobs-claim-response.png') });

    await openAuthorize();
    await loginSection('siteClientLogin').locator('button', { hasText: 'Logout' }).click();
    await closeAuthorize();
  });

  it('logs in with ORCID through the external issuer and ends authorized as that researcher', async () => {
    await openAuthorize();
    const section = loginSection('orcidLogin');
    await section.getByText('select all', { exact: true }).click();
    const popup = page.waitForEvent('popup');
    await section.locator('button.authorize').click();
    // The popup signs in at the external issuer, comes back through the service and closes itself.
    await (await popup).waitForEvent('close', { timeout: 15_000 });
    await section.locator('button', { hasText: 'Logout' }).waitFor();
    await closeAuthorize();
    await page.locator('#nmdc-login-banner:not([hidden])').waitFor();

    const { status, body } = await responseJson(await tryItOut('get', '/users/me'));
    expect(status).toBe('200');
    expect(body).toMatchObject({ username: RESEARCHER_ORCID });
  });
});
