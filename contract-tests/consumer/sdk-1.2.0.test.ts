/**
 * Consumer contract of the generated 1.2.0 SDK: every call below goes through
 * `createNmdcClient` against the Pact mock server, which records the pact file in `pacts/`.
 */
import fs from 'node:fs';
import { beforeAll, describe, expect, it } from 'vitest';
import { PactV3 } from '@pact-foundation/pact';
import { createNmdcClient } from '../../generated/sdk-1.2.0/index.ts';
import {
  ABSENT_BIOSAMPLE_ID,
  BIOSAMPLE_FILTER,
  BIOSAMPLE_ID,
  BIOSAMPLES,
  CONSUMER_1_2_0,
  JOB_ID,
  NEW_SITE_ID,
  OPERATION_ID,
  OPERATION_PROGRESS,
  OPERATION_RESULT,
  PACT_DIR,
  PAGE_SIZE,
  PLANNED_PROCESS_ID,
  PROVIDER,
  SCHEMA_FILTER,
  SITE_CLIENT,
  SITE_ID,
  USER,
  pactFileOf,
} from '../contract-fixtures.ts';
import * as interaction from './interactions.ts';
import { mockServerFetch } from './mock-fetch.ts';

const pact = () =>
  new PactV3({ consumer: CONSUMER_1_2_0, provider: PROVIDER, dir: PACT_DIR, logLevel: 'warn' });
const TOKEN = 'eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJwYWN0LXJlc2VhcmNoZXIifQ.c2lnbmF0dXJl';
/** Example tokens of two site clients (the provider signs in the one its state names). */
const SITE_TOKEN = 'eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJzeXMwcGFjdDAwMDAwMDAwMSJ9.c2lnbmF0dXJl';
const OTHER_SITE_TOKEN = 'eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJzeXMwcGFjdDAwMDAwMDAwMiJ9.c2lnbmF0dXJl';

// Pact merges into an existing file; start from an empty one so removed interactions disappear.
beforeAll(() => fs.rmSync(pactFileOf(CONSUMER_1_2_0), { force: true }));

describe(`${CONSUMER_1_2_0} expects of ${PROVIDER}`, () => {
  it('pages a compact find with a filter from cursor=* through next_cursor to the end', async () => {
    await pact()
      .addInteraction(interaction.findFirstPage('/biosamples'))
      .addInteraction(interaction.findNextPage('/biosamples'))
      .executeTest(async (mock) => {
        const nmdc = createNmdcClient({ baseUrl: mock.url, fetch: mockServerFetch });
        const ids: string[] = [];
        for await (const b of nmdc.paginate('findBiosamples', {
          query: { filter: BIOSAMPLE_FILTER, per_page: PAGE_SIZE },
        })) {
          ids.push(b.id);
        }
        expect(ids).toEqual(BIOSAMPLES.map((b) => b.id));
      });
  });

  it('reads one biosample by id, and gets 404 {detail} for an absent one', async () => {
    await pact()
      .addInteraction(interaction.getBiosample())
      .addInteraction(interaction.getAbsentBiosample())
      .executeTest(async (mock) => {
        const nmdc = createNmdcClient({ baseUrl: mock.url, fetch: mockServerFetch });
        const found = await nmdc.getBiosample({ path: { sample_id: BIOSAMPLE_ID } });
        expect(found.data).toMatchObject({ id: BIOSAMPLE_ID, associated_studies: [expect.any(String)] });
        const absent = await nmdc.getBiosample({ path: { sample_id: ABSENT_BIOSAMPLE_ID } });
        expect(absent.response.status).toBe(404);
        expect(absent.error).toEqual({ detail: 'Not found' });
      });
  });

  it('finds planned processes as activities at /activities', async () => {
    await pact()
      .addInteraction(interaction.findPlannedProcesses('/activities'))
      .executeTest(async (mock) => {
        const nmdc = createNmdcClient({ baseUrl: mock.url, fetch: mockServerFetch });
        const { data } = await nmdc.findActivities({ query: { filter: `has_input:${BIOSAMPLE_ID}` } });
        expect(data?.results.map((p) => p.id)).toEqual([PLANNED_PROCESS_ID]);
      });
  });

  it('pages a collection query with a JSON filter and a projection through next_page_token', async () => {
    await pact()
      .addInteraction(interaction.schemaQueryFirstPage())
      .addInteraction(interaction.schemaQueryNextPage())
      .executeTest(async (mock) => {
        const nmdc = createNmdcClient({ baseUrl: mock.url, fetch: mockServerFetch });
        const names: unknown[] = [];
        for await (const record of nmdc.paginate('listCollectionRecords', {
          path: { collection_name: 'biosample_set' },
          query: { filter: SCHEMA_FILTER, projection: 'name', max_page_size: PAGE_SIZE },
        })) {
          names.push(record.name);
        }
        expect(names).toEqual(BIOSAMPLES.map((b) => b.name));
      });
  });

  it('logs in with the password grant and with the client_credentials grant', async () => {
    await pact()
      .addInteraction(interaction.passwordLogin())
      .addInteraction(interaction.clientCredentialsLogin())
      .executeTest(async (mock) => {
        const nmdc = createNmdcClient({ baseUrl: mock.url, fetch: mockServerFetch });
        const user = await nmdc.login({ body: { grant_type: 'password', ...USER } });
        expect(user.data).toMatchObject({ token_type: 'bearer', access_token: expect.stringMatching(/\./) });
        const client = await nmdc.login({ body: { grant_type: 'client_credentials', ...SITE_CLIENT } });
        expect(client.data?.expires).toEqual({ days: 1, hours: 0, minutes: 0 });
      });
  });

  it('runs a find at /queries:run and continues it with getMore', async () => {
    await pact()
      .addInteraction(interaction.runFind())
      .addInteraction(interaction.runGetMore())
      .executeTest(async (mock) => {
        const nmdc = createNmdcClient({ baseUrl: mock.url, token: TOKEN, fetch: mockServerFetch });
        const first = await nmdc.runQuery({ body: interaction.FIND_COMMAND });
        if (!first.data || !('cursor' in first.data))
          throw new Error(`expected a cursor, got ${JSON.stringify(first.error)}`);
        const { cursor } = first.data;
        expect(cursor.firstBatch?.map((b) => b.id)).toEqual([BIOSAMPLES[0]!.id, BIOSAMPLES[1]!.id]);
        expect(cursor.ns).toBe('nmdc.biosample_set');
        const more = await nmdc.runQuery({ body: { getMore: cursor.id!, batchSize: PAGE_SIZE } });
        expect(more.data).toMatchObject({
          ok: 1,
          cursor: { nextBatch: [{ id: BIOSAMPLES[2]!.id }], id: null },
        });
      });
  });

  it('creates a site, gets 409 for an id that exists, and generates site credentials', async () => {
    await pact()
      .addInteraction(interaction.createSite())
      .addInteraction(interaction.createExistingSite())
      .addInteraction(interaction.generateCredentials())
      .executeTest(async (mock) => {
        const nmdc = createNmdcClient({ baseUrl: mock.url, token: TOKEN, fetch: mockServerFetch });
        const created = await nmdc.createSite({ body: { id: NEW_SITE_ID } });
        expect(created.response.status).toBe(201);
        expect(created.data).toEqual({ id: NEW_SITE_ID, capability_ids: [] });
        const conflict = await nmdc.createSite({ body: { id: SITE_ID } });
        expect(conflict.response.status).toBe(409);
        expect(conflict.error).toEqual({ detail: expect.stringContaining(SITE_ID) });
        const credentials = await nmdc.generateSiteCredentials({ path: { site_id: SITE_ID } });
        expect(credentials.data).toEqual({
          client_id: expect.any(String),
          client_secret: expect.any(String),
        });
      });
  });

  // A mock server cannot tell two identical requests apart: each answer has its own mock server.
  it('claims a job as a site client, and gets 409 naming the held operation on a second claim', async () => {
    await pact()
      .addInteraction(interaction.claimJob())
      .executeTest(async (mock) => {
        const site = createNmdcClient({ baseUrl: mock.url, token: SITE_TOKEN, fetch: mockServerFetch });
        const claimed = await site.claimJob({ path: { job_id: JOB_ID } });
        expect(claimed.response.status).toBe(200);
        expect(claimed.data).toMatchObject({
          id: expect.stringMatching(/^nmdc:/),
          done: false,
          expire_time: expect.any(String),
          metadata: { job: { id: JOB_ID }, site_id: SITE_ID },
        });
      });
    await pact()
      .addInteraction(interaction.claimJobAgain())
      .executeTest(async (mock) => {
        const site = createNmdcClient({ baseUrl: mock.url, token: SITE_TOKEN, fetch: mockServerFetch });
        const again = await site.claimJob({ path: { job_id: JOB_ID } });
        expect(again.response.status).toBe(409);
        expect(again.error).toEqual({ detail: expect.stringContaining(JOB_ID), id: OPERATION_ID });
      });
  });

  it("reports progress and completion on its operation, and gets 403 patching another site's", async () => {
    const path = { op_id: OPERATION_ID };
    await pact()
      .addInteraction(interaction.reportOperationProgress())
      .addInteraction(interaction.completeOperation())
      .executeTest(async (mock) => {
        const site = createNmdcClient({ baseUrl: mock.url, token: SITE_TOKEN, fetch: mockServerFetch });
        const progress = await site.updateOperation({ path, body: OPERATION_PROGRESS });
        expect(progress.data).toMatchObject({
          id: OPERATION_ID,
          done: false,
          metadata: { ...OPERATION_PROGRESS.metadata, job: { id: JOB_ID }, site_id: SITE_ID },
        });
        const completed = await site.updateOperation({ path, body: OPERATION_RESULT });
        expect(completed.data).toMatchObject({ id: OPERATION_ID, ...OPERATION_RESULT });
      });
    await pact()
      .addInteraction(interaction.updateOtherSitesOperation())
      .executeTest(async (mock) => {
        const other = createNmdcClient({
          baseUrl: mock.url,
          token: OTHER_SITE_TOKEN,
          fetch: mockServerFetch,
        });
        const refused = await other.updateOperation({ path, body: OPERATION_RESULT });
        expect(refused.response.status).toBe(403);
        expect(refused.error).toEqual({ detail: expect.stringContaining(SITE_ID) });
      });
  });
});
