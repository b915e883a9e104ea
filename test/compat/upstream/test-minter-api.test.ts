/**
 * Port of the original's tests/e2e/test_minter_api.py (v2.13.0): minting, resolving, binding and
 * deleting an id as the site client, for the first schema class the original's minter lists
 * (`nmdc:Biosample`, the first class of the schema whose id pattern carries a typecode).
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { withUpstreamServer, type UpstreamServer } from './support/harness.ts';
import { HttpError } from './support/client.ts';

const SCHEMA_CLASS = 'nmdc:Biosample';

let server: UpstreamServer;
/** The fixture `mint_one_id_response`: the minted ids. */
let minted: string[];

withUpstreamServer((started) => (server = started));

beforeEach(async () => {
  minted = (await server.siteClient().mintId(SCHEMA_CLASS)).json as string[];
});
afterEach(async () => {
  // Delete the minted id unless the test did.
  const client = server.siteClient();
  try {
    await client.request('GET', `/pids/resolve/${minted[0]}`);
  } catch (err) {
    if (err instanceof HttpError && err.response.status === 404) return;
    throw err;
  }
  expect((await client.request('POST', '/pids/delete', { id_name: minted[0] })).status).toBe(200);
});

describe('tests/e2e/test_minter_api.py', () => {
  it('test_minter_api.py::test_minter_api_mint', () => {
    expect(minted).toHaveLength(1);
    expect(minted[0]!.startsWith('nmdc:')).toBe(true);
    expect(minted[0]).toMatch(/^nmdc:bsm-11-[a-z0-9]+$/);
  });

  it('test_minter_api.py::test_minter_api_resolve', async () => {
    const idName = minted[0]!;
    const rv = (await server.siteClient().request('GET', `/pids/resolve/${idName}`)).json;
    expect(rv.id).toBe(idName);
    expect(rv.status).toBe('draft');
  });

  it('test_minter_api.py::test_minter_api_bind', async () => {
    const idName = minted[0]!;
    const rv = (
      await server.siteClient().request('POST', '/pids/bind', {
        id_name: idName,
        metadata_record: { foo: 'bar' },
      })
    ).json;
    expect(rv.id).toBe(idName);
    expect(rv.status).toBe('draft');
    expect(rv.bindings).toEqual({ foo: 'bar' });
  });

  it('test_minter_api.py::test_minter_api_delete', async () => {
    const idName = minted[0]!;
    const rv = await server.siteClient().request('POST', '/pids/delete', { id_name: idName });
    expect(rv.status).toBe(200);
    const gone = await server.siteClient().failing('GET', `/pids/resolve/${idName}`);
    expect(gone.status).toBe(404);
  });
});
