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
  NEW_SITE_ID,
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
import { workflowContract } from './workflow-contract.ts';

const pact = () =>
  new PactV3({ consumer: CONSUMER_1_2_0, provider: PROVIDER, dir: PACT_DIR, logLevel: 'warn' });
const TOKEN = 'eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJwYWN0LXJlc2VhcmNoZXIifQ.c2lnbmF0dXJl';
/** Example tokens of two site clients (the provider signs in the one its state names). */

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

  workflowContract(pact, (options) => createNmdcClient(options));
});
