/**
 * The service as the original's tests meet it (their `conftest.py` and `ensure_test_resources`):
 * listening on 127.0.0.1, with the user `testuser` (a password login, administrator of the site
 * `testsite`), a client of that site, and the job `nmdc:fk0jb83` of the workflow `test`. Records a
 * test needs are written the way the service writes them (the store with its search and edge
 * indexes, the Allowances of the accounts module), never by reaching under the store, and
 * `cleanup` takes them away again, as the original's tests clean up after themselves.
 */
import { afterAll, afterEach, beforeAll } from 'vitest';
import { startTestServer, type TestServer } from '../../../support/server.ts';
import { Accounts, Allowances, setBcryptCost, type AllowanceAction } from '../../../../src/accounts/index.ts';
import { RecordWriter } from '../../../../search/writer.ts';
import { JOBS } from '../../../../src/workflows/jobs.ts';
import { OPERATIONS } from '../../../../src/workflows/operations.ts';
import type { Doc, Filter } from '../../../../src/store/port.ts';
import { StagingRecords, readStagingBody, type StagingKind } from '../../../../src/workflows/file-staging.ts';
import { RuntimeApiSiteClient, RuntimeApiUserClient } from './client.ts';

setBcryptCost(4);

export const TEST_USER = { username: 'testuser', password: 'testuser-password-for-the-port-1' };
export const ADMIN = { username: 'admin', password: 'admin-password-for-the-port-1' };
export const TEST_SITE = 'testsite';
export const TEST_JOB = { id: 'nmdc:fk0jb83', workflow: { id: 'test' }, config: {}, claims: [] };

export interface UpstreamServer extends TestServer {
  accounts: Accounts;
  allowances: Allowances;
  siteCredentials: { client_id: string; client_secret: string };
  /** `api_user_client`: testuser, logged in with its password. */
  userClient(): RuntimeApiUserClient;
  /** `api_site_client`: the client of testsite. */
  siteClient(): RuntimeApiSiteClient;
  /** The runtime administrator created at start. */
  adminClient(): RuntimeApiUserClient;
  /** Writes records as the service does (store, search index, edges); `cleanup` removes them. */
  add(collection: string, docs: Array<Record<string, unknown>>): Promise<void>;
  /** Stores file staging records as the service does (its model read, then inserted); `cleanup` removes them. */
  stage(kind: StagingKind, records: Array<Record<string, unknown>>): Promise<void>;
  /** Removes records by id (store, search index, edges). */
  remove(collection: string, ids: string[]): Promise<void>;
  count(collection: string, filter?: Filter): Promise<number>;
  get(collection: string, id: string): Promise<Doc | null>;
  /** Grants an allowance (through the accounts module); `cleanup` revokes it. */
  allow(username: string, action: AllowanceAction): Promise<void>;
  disallow(username: string, action: AllowanceAction): Promise<void>;
  /** `ensure_test_resources`: the test job back without claims, its operations gone. */
  ensureTestResources(): Promise<void>;
  /** Removes what `add` and `allow` put in, newest first. */
  cleanup(): Promise<void>;
}

export async function startUpstreamServer(): Promise<UpstreamServer> {
  const server = await startTestServer({ ADMIN_USERNAME: ADMIN.username, ADMIN_PASSWORD: ADMIN.password });
  const accounts = new Accounts(server.store);
  const allowances = new Allowances(server.store);
  const writer = new RecordWriter(server.store, [server.searchIndex, server.edgeIndex]);

  await accounts.createUser(TEST_USER);
  await accounts.createSite(TEST_SITE, [], TEST_USER.username);
  const siteCredentials = await accounts.generateSiteCredentials(
    TEST_SITE,
    (await accounts.getUser(TEST_USER.username))!,
  );

  const added: Array<{ collection: string; ids: string[] }> = [];
  const granted: Array<{ username: string; action: AllowanceAction }> = [];
  const userClient = new RuntimeApiUserClient(server.url, TEST_USER.username, TEST_USER.password);
  const siteClient = new RuntimeApiSiteClient(
    server.url,
    TEST_SITE,
    siteCredentials.client_id,
    siteCredentials.client_secret,
  );
  const adminClient = new RuntimeApiUserClient(server.url, ADMIN.username, ADMIN.password);

  const ensureTestResources = async () => {
    await server.store.deleteMany(OPERATIONS, {
      'metadata.job.id': TEST_JOB.id,
      'metadata.site_id': TEST_SITE,
    });
    await server.store.upsertMany(JOBS, [structuredClone(TEST_JOB)]);
  };
  await ensureTestResources();

  return Object.assign(server, {
    accounts,
    allowances,
    siteCredentials,
    userClient: () => userClient,
    siteClient: () => siteClient,
    adminClient: () => adminClient,
    ensureTestResources,
    async add(collection: string, docs: Array<Record<string, unknown>>) {
      await writer.upsert(collection, docs);
      const ids = docs.map((d) => d.id).filter((id): id is string => typeof id === 'string');
      added.push({ collection, ids });
    },
    async stage(kind: StagingKind, records: Array<Record<string, unknown>>) {
      const staging = new StagingRecords(server.store, kind);
      for (const record of records) await staging.create(readStagingBody(kind, record, false));
      added.push({ collection: kind.collection, ids: records.map((r) => String(r[kind.key])) });
    },
    async remove(collection: string, ids: string[]) {
      if (ids.length > 0) await writer.delete(collection, { id: { $in: ids } });
    },
    count: (collection: string, filter: Filter = {}) => server.store.count(collection, filter),
    get: (collection: string, id: string) => server.store.getById(collection, id),
    async allow(username: string, action: AllowanceAction) {
      if (await allowances.create({ username, action })) granted.push({ username, action });
    },
    async disallow(username: string, action: AllowanceAction) {
      await allowances.remove({ username, action });
    },
    async cleanup() {
      for (const { collection, ids } of added.splice(0).reverse())
        if (ids.length > 0) await writer.delete(collection, { id: { $in: ids } });
      for (const allowance of granted.splice(0)) await allowances.remove(allowance);
    },
  });
}

/**
 * A test file's server: started before its tests (handed to `use`), cleaned up after each test
 * and closed after the last.
 */
export function withUpstreamServer(use: (server: UpstreamServer) => void): void {
  let server: UpstreamServer | undefined;
  beforeAll(async () => {
    server = await startUpstreamServer();
    use(server);
  });
  afterEach(async () => server?.cleanup());
  afterAll(async () => server?.close());
}
