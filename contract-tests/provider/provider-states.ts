/**
 * Provider states of the contracts: each creates exactly the records and accounts its
 * interactions need on the running service, and hands back the values (cursor, page token, query
 * cursor id) that only the running service can produce. The token of the user or site client the
 * last state signed in is kept for the request filter, which puts it in place of the example token
 * the consumers recorded.
 */
import type { VerifierOptions } from '@pact-foundation/pact';
import type { Doc } from '../../src/store/port.ts';
import { Accounts, hashSecret, SITE_CLIENTS, type SiteClientRecord } from '../../src/accounts/index.ts';
import type { TestServer } from '../../test/support/server.ts';
import { JOBS, type JobRecord } from '../../src/workflows/jobs.ts';
import { OPERATIONS, claimOperation } from '../../src/workflows/operations.ts';
import {
  ABSENT_BIOSAMPLE_ID,
  BIOSAMPLE_FILTER,
  BIOSAMPLES,
  INJECTED,
  JOB,
  JOB_ID,
  NEW_SITE_ID,
  OPERATION_ID,
  OTHER_SITE_CLIENT,
  OTHER_SITE_ID,
  PAGE_SIZE,
  PLANNED_PROCESSES,
  SCHEMA_FILTER,
  SITE_CLIENT,
  SITE_ID,
  STATE,
  USER,
} from '../contract-fixtures.ts';
import { FIND_COMMAND } from '../consumer/interactions.ts';

type StateHandlers = NonNullable<VerifierOptions['stateHandlers']>;

export interface ProviderSession {
  /** The access token of the user or site client signed in by the last state, if any. */
  bearer: string | undefined;
}

async function getJson(url: string, init?: RequestInit): Promise<Record<string, any>> {
  const response = await fetch(url, init);
  const body = (await response.json()) as Record<string, any>;
  if (!response.ok)
    throw new Error(`${init?.method ?? 'GET'} ${url}: ${response.status} ${JSON.stringify(body)}`);
  return body;
}

export function providerStates(server: TestServer, session: ProviderSession): StateHandlers {
  const accounts = new Accounts(server.store);

  const seed = async (collection: string, docs: Array<{ id: string } & Record<string, unknown>>) => {
    await server.store.upsertMany(collection, docs);
    await server.searchIndex.index(collection, docs);
  };
  const seedBiosamples = () => seed('biosample_set', BIOSAMPLES);

  const signIn = async (sites: string[] = []) => {
    await accounts.setPassword(USER.username, USER.password, sites);
    const token = await getJson(`${server.url}/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'password', ...USER }).toString(),
    });
    session.bearer = token.access_token as string;
    return session.bearer;
  };

  /** Site `siteId` exists (without capabilities) and has the client `credentials`. */
  const siteWithClient = async (
    siteId: string,
    credentials: { client_id: string; client_secret: string },
  ): Promise<void> => {
    await accounts.ensureSite(siteId);
    const client: SiteClientRecord = {
      id: credentials.client_id,
      client_id: credentials.client_id,
      secret_hash: await hashSecret(credentials.client_secret),
      site_id: siteId,
      created_at: new Date().toISOString(),
    };
    await server.store.upsertMany(SITE_CLIENTS, [client as unknown as Doc]);
  };

  /** Creates the site and its client and signs the client in; its token is the session's from now on. */
  const signInSiteClient = async (
    siteId: string,
    credentials: { client_id: string; client_secret: string },
  ): Promise<void> => {
    await siteWithClient(siteId, credentials);
    const token = await getJson(`${server.url}/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'client_credentials', ...credentials }).toString(),
    });
    session.bearer = token.access_token as string;
  };

  /**
   * The job as the contracts know it, with no claim (an earlier interaction may have claimed or
   * completed it); the operations of earlier claims of it are removed.
   */
  const unclaimedJob = async (): Promise<JobRecord> => {
    const job: JobRecord = { ...JOB, claims: [] };
    await server.store.deleteMany(OPERATIONS, { 'metadata.job.id': JOB_ID });
    await server.store.upsertMany(JOBS, [job]);
    return job;
  };

  /** The site's claim of the job through the operation of the known id, running (not done). */
  const claimedJob = async (): Promise<void> => {
    const job = await unclaimedJob();
    const operation = claimOperation(OPERATION_ID, job, SITE_ID, new Date());
    await server.store.upsertMany(OPERATIONS, [operation]);
    await server.store.upsertMany(JOBS, [{ ...job, claims: [{ op_id: OPERATION_ID, site_id: SITE_ID }] }]);
  };

  return {
    [STATE.biosamples]: async () => {
      await seedBiosamples();
      return undefined;
    },
    [STATE.biosamplesCursor]: async () => {
      await seedBiosamples();
      const query = new URLSearchParams({
        filter: BIOSAMPLE_FILTER,
        per_page: String(PAGE_SIZE),
        cursor: '*',
      });
      const page = await getJson(`${server.url}/biosamples?${query.toString()}`);
      return { [INJECTED.cursor]: page.meta.next_cursor as string };
    },
    [STATE.biosamplesPageToken]: async () => {
      await seedBiosamples();
      const query = new URLSearchParams({
        filter: SCHEMA_FILTER,
        projection: 'name',
        max_page_size: String(PAGE_SIZE),
      });
      const page = await getJson(`${server.url}/nmdcschema/biosample_set?${query.toString()}`);
      return { [INJECTED.pageToken]: page.next_page_token as string };
    },
    [STATE.noBiosample]: async () => {
      await server.store.deleteMany('biosample_set', { id: ABSENT_BIOSAMPLE_ID });
      return undefined;
    },
    [STATE.plannedProcesses]: async () => {
      await seedBiosamples();
      await seed('workflow_execution_set', PLANNED_PROCESSES);
      return undefined;
    },
    [STATE.user]: async () => {
      await accounts.setPassword(USER.username, USER.password);
      return undefined;
    },
    [STATE.siteClient]: async () => {
      await siteWithClient(SITE_ID, SITE_CLIENT);
      return undefined;
    },
    [STATE.signedInWithBiosamples]: async () => {
      await seedBiosamples();
      await signIn();
      return undefined;
    },
    [STATE.queryCursorOpen]: async () => {
      await seedBiosamples();
      const token = await signIn();
      const first = await getJson(`${server.url}/queries:run`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
        body: JSON.stringify(FIND_COMMAND),
      });
      return { [INJECTED.queryCursorId]: first.cursor.id as string };
    },
    [STATE.signedInWithoutNewSite]: async () => {
      await signIn();
      await server.store.deleteMany('sites', { id: NEW_SITE_ID });
      return undefined;
    },
    [STATE.signedInSiteAdmin]: async () => {
      await accounts.ensureSite(SITE_ID);
      await signIn([SITE_ID]);
      return undefined;
    },
    [STATE.jobClaimable]: async () => {
      await unclaimedJob();
      await signInSiteClient(SITE_ID, SITE_CLIENT);
      return undefined;
    },
    [STATE.jobClaimed]: async () => {
      await claimedJob();
      await signInSiteClient(SITE_ID, SITE_CLIENT);
      return undefined;
    },
    [STATE.jobClaimedOtherSiteSignedIn]: async () => {
      await claimedJob();
      await siteWithClient(SITE_ID, SITE_CLIENT);
      await signInSiteClient(OTHER_SITE_ID, OTHER_SITE_CLIENT);
      return undefined;
    },
  };
}
