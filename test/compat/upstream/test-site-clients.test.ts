/**
 * Port of the original's tests/test_api/test_site_clients.py (v2.13.0):
 * `PATCH /admin/site_clients/{site_client_id}` as testuser holding the `/admin/site_clients`
 * allowance, on a site client whose secret the test knows.
 */
import { describe, expect, it } from 'vitest';
import {
  SITE_CLIENTS,
  hashSecret,
  verifySecret,
  type SiteClientRecord,
} from '../../../src/accounts/index.ts';
import { ADMIN, TEST_USER, withUpstreamServer, type UpstreamServer } from './support/harness.ts';
import { plainRequest } from './support/client.ts';

let server: UpstreamServer;
withUpstreamServer((started) => (server = started));

const SITE_ID = '__test_site_id';
const SITE_CLIENT_ID = '__test_site_client_id';
const INITIAL_SECRET = '__test_client_initial_secret';

/** The fixture `db_containing_site_client`: a site with a client whose secret is known. */
async function siteWithClient(): Promise<void> {
  await server.accounts.createSite(SITE_ID, [], ADMIN.username);
  const client: SiteClientRecord = {
    id: SITE_CLIENT_ID,
    client_id: SITE_CLIENT_ID,
    secret_hash: await hashSecret(INITIAL_SECRET),
    site_id: SITE_ID,
    created_at: new Date().toISOString(),
  };
  await server.add(SITE_CLIENTS, [client as unknown as Record<string, unknown>]);
}

const hashOf = async () =>
  ((await server.get(SITE_CLIENTS, SITE_CLIENT_ID)) as unknown as SiteClientRecord).secret_hash;
const login = (secret: string) =>
  plainRequest(server.url, 'POST', '/token', {
    form: [
      ['grant_type', 'client_credentials'],
      ['client_id', SITE_CLIENT_ID],
      ['client_secret', secret],
    ],
  });

describe('tests/test_api/test_site_clients.py', () => {
  it('test_site_clients.py::test_update_site_client_secret', async () => {
    await server.allow(TEST_USER.username, '/admin/site_clients');
    await siteWithClient();
    const client = server.userClient();
    const initialHash = await hashOf();
    expect((await login(INITIAL_SECRET)).status).toBe(200);

    // No secret: a valid request that changes nothing.
    const noop = await client.request('PATCH', `/admin/site_clients/${SITE_CLIENT_ID}`, {});
    expect(noop.status).toBe(204);
    expect(await hashOf()).toBe(initialHash);

    const missing = await client.failing('PATCH', '/admin/site_clients/__nonexistent_site_client_id', {
      secret: 'my_new_secret!',
    });
    expect(missing.status).toBe(404);

    const short = await client.failing('PATCH', `/admin/site_clients/${SITE_CLIENT_ID}`, {
      secret: '2short',
    });
    expect(short.status).toBe(422);
    expect(short.json.detail).toMatch(/secret/);

    const newSecret = 'my_new_secret!';
    const updated = await client.request('PATCH', `/admin/site_clients/${SITE_CLIENT_ID}`, {
      secret: newSecret,
    });
    expect(updated.status).toBe(200);

    const newHash = await hashOf();
    expect(newHash).not.toBe(initialHash);
    expect(await verifySecret(newSecret, initialHash)).toBe(false);
    expect(await verifySecret(newSecret, newHash)).toBe(true);
    // The client logs in with the new secret only.
    expect((await login(newSecret)).status).toBe(200);
    expect((await login(INITIAL_SECRET)).status).toBe(401);
  });
});
