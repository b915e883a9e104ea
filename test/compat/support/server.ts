/**
 * The service as the public clients meet it: listening on 127.0.0.1, holding NMDC-shaped records
 * (studies, biosamples, data generations, workflow executions, data objects from the seeded
 * generator, plus whatever a test file adds), a user who logs in with a password, a runtime
 * administrator and a site client. Expected answers are read from `store`, the source of truth.
 */
import { startTestServer, type TestServer } from '../../support/server.ts';
import { Accounts, setBcryptCost } from '../../../src/accounts/index.ts';
import { generateDatabase } from '../../../src/data/generator.ts';
import { RecordWriter } from '../../../search/writer.ts';
import type { Doc } from '../../../src/store/port.ts';

setBcryptCost(4);

export const USER = { username: 'compat-researcher', password: 'compat-researcher-password-1' };
export const ADMIN = { username: 'compat-admin', password: 'compat-admin-password-1' };
export const SITE_ID = 'compat-site';

export interface CompatServer extends TestServer {
  /** A site client of SITE_ID, administered by USER. */
  siteClient: { client_id: string; client_secret: string };
  /** Writes records to the store and the search index, as the loader does. */
  add(collection: string, docs: Doc[]): Promise<void>;
}

/** The generated records every compat server starts with (deterministic). */
export const SEEDED = { studies: 4, biosamples: 40, dataObjects: 160, seed: 2026 };

export async function startCompatServer(
  extra: Record<string, Doc[]> = {},
  env: Record<string, string> = {},
): Promise<CompatServer> {
  const server = await startTestServer({
    ADMIN_USERNAME: ADMIN.username,
    ADMIN_PASSWORD: ADMIN.password,
    ...env,
  });
  const writer = new RecordWriter(server.store, server.searchIndex);
  const add = async (collection: string, docs: Doc[]) => void (await writer.upsert(collection, docs));
  for (const [collection, docs] of Object.entries(generateDatabase(SEEDED))) await add(collection, docs);
  for (const [collection, docs] of Object.entries(extra)) await add(collection, docs);

  const accounts = new Accounts(server.store);
  const user = await accounts.createUser(USER);
  await accounts.createSite(SITE_ID, [], user.username);
  const siteClient = await accounts.generateSiteCredentials(
    SITE_ID,
    (await accounts.getUser(USER.username))!,
  );
  return Object.assign(server, { siteClient, add });
}
