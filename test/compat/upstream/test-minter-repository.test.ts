/**
 * Port of the original's tests/integration/test_minter_repository.py (v2.13.0). The original
 * drives its two id stores (in memory, and MongoDB's `minter.id_records`) with a minting request
 * of its first service, requester and schema class (`nmdc:Biosample`); the port sends the same
 * requests to the minter's endpoints as the site client (`/pids/mint`, `/pids/resolve/{id}`,
 * `/pids/delete`). The service has one id store, the document store's `pids` collection: the
 * MongoDB variants count its records as the original counts `minter.id_records` (from what was
 * there before the test, where the original drops the collection first).
 *
 * `test_mongo_mint_one` is marked `xfail` in the original ("Skipping failed tests to restore
 * automated pipeline"); here it passes.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { PIDS } from '../../../src/pids/minter.ts';
import { withUpstreamServer, type UpstreamServer } from './support/harness.ts';
import { HttpError } from './support/client.ts';

const SCHEMA_CLASS = 'nmdc:Biosample';

let server: UpstreamServer;
withUpstreamServer((started) => (server = started));

/** Ids a test minted; the store's records of those left are removed after it. */
let minted: string[] = [];
afterEach(async () => {
  if (minted.length > 0) await server.store.deleteMany(PIDS, { id: { $in: minted } });
  minted = [];
});

/** `s.mint(req_mint)` with `how_many` ids: the minted ids. */
async function mint(howMany = 1): Promise<string[]> {
  const response = await server.siteClient().mintId(SCHEMA_CLASS, howMany);
  expect(response.status).toBe(200);
  const ids = response.json as string[];
  minted.push(...ids);
  return ids;
}

/** `s.resolve(ResolutionRequest(id_name=...))`: the identifier, or null (404). */
async function resolve(idName: string): Promise<Record<string, unknown> | null> {
  try {
    return (await server.siteClient().request('GET', `/pids/resolve/${idName}`)).json as Record<
      string,
      unknown
    >;
  } catch (err) {
    if (err instanceof HttpError && err.response.status === 404) return null;
    throw err;
  }
}

/** `s.delete(DeleteRequest(id_name=...))`. */
async function remove(idName: string): Promise<void> {
  const response = await server.siteClient().request('POST', '/pids/delete', { id_name: idName });
  expect(response.status).toBe(200);
}

const idRecords = () => server.count(PIDS);

/** The cases, each run for the in-memory store (`counted` false) and for MongoDB's (true). */
const cases = {
  async mintOne(counted: boolean) {
    const before = await idRecords();
    const ids = await mint(1);
    expect(ids).toHaveLength(1);
    expect(ids[0]).toMatch(/^nmdc:bsm-11-[a-z0-9]+$/);
    if (counted) expect(await idRecords()).toBe(before + 1);
  },
  async mintMany(counted: boolean) {
    const before = await idRecords();
    const ids = await mint(1_000);
    expect(ids).toHaveLength(1_000);
    expect(new Set(ids).size).toBe(1_000);
    if (counted) expect(await idRecords()).toBe(before + 1_000);
  },
  async mintAndResolve() {
    const [id] = await mint(1);
    const resolved = await resolve(id!);
    expect(resolved).not.toBeNull();
    expect(resolved).toMatchObject({ id, name: id, status: 'draft' });
  },
  async mintAndDelete(counted: boolean) {
    const before = await idRecords();
    const [id] = await mint(1);
    await remove(id!);
    expect(await resolve(id!)).toBeNull();
    if (counted) expect(await idRecords()).toBe(before);
  },
};

describe('tests/integration/test_minter_repository.py', () => {
  it('test_minter_repository.py::test_mint_one', () => cases.mintOne(false));
  it('test_minter_repository.py::test_mint_many', () => cases.mintMany(false));
  it('test_minter_repository.py::test_mint_and_resolve', () => cases.mintAndResolve());
  it('test_minter_repository.py::test_mint_and_delete', () => cases.mintAndDelete(false));
  it('test_minter_repository.py::test_mongo_mint_one', () => cases.mintOne(true));
  it('test_minter_repository.py::test_mongo_mint_many', () => cases.mintMany(true));
  it('test_minter_repository.py::test_mongo_mint_and_resolve', () => cases.mintAndResolve());
  it('test_minter_repository.py::test_mongo_mint_and_delete', () => cases.mintAndDelete(true));
});
