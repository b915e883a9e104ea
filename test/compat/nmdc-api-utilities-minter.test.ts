/**
 * nmdc_api_utilities (the NMDC Python client), minter.py: `Minter.mint(nmdc_type, count)` gets a
 * token from `NMDCAuth` (client credentials), then posts `json.dumps({"schema_class": {"id":
 * nmdc_type}, "how_many": count})` to /pids/mint with its Bearer token and a JSON Content-Type,
 * calls `raise_for_status` (any 4xx or 5xx becomes a RuntimeError) and returns the first id when
 * count is 1, else the list. A count below 1 is refused before anything is sent.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SITE_ID, USER, startCompatServer, type CompatServer } from './support/server.ts';
import { send, type WireResponse } from './support/wire.ts';
import { jsonDumps } from './support/python.ts';
import { READ_HEADERS, clientCredentialsForm, getToken } from './support/nmdc-api-utilities-client.ts';
import { PIDS, idPatternOfClass } from '../../src/pids/index.ts';

let server: CompatServer;

beforeAll(async () => {
  server = await startCompatServer();
});
afterAll(async () => server?.close());

/** `NMDCAuth.get_token`: the form the client posts for its grant; its `access_token`. */
const tokenFor = (form: Array<[string, string]>) => getToken(server.url, form);

const siteClientToken = () => tokenFor(clientCredentialsForm(server.siteClient));

/**
 * The request `Minter.mint` sends: requests' session headers (User-Agent replaced by the client's)
 * then the Authorization and Content-Type it adds, and the `json.dumps` body.
 */
function postMint(token: string, nmdcType: string, count: number): Promise<WireResponse> {
  const body = jsonDumps({ schema_class: { id: nmdcType }, how_many: count });
  return send(server.url, {
    method: 'POST',
    target: '/pids/mint',
    headers: { ...READ_HEADERS, Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
    body,
  });
}

/** What `Minter.mint` returns after `raise_for_status`: the first id for a count of 1, else the list. */
function minted(res: WireResponse, count: number): string | string[] {
  expect(res.status, res.text).toBe(200);
  expect(res.headers['content-type']).toMatch(/^application\/json/);
  expect(Array.isArray(res.json)).toBe(true);
  expect(res.json).toHaveLength(count);
  return count === 1 ? res.json[0] : res.json;
}

async function expectStoredDraftOfTheSite(id: string): Promise<void> {
  expect(await server.store.getById(PIDS, id)).toMatchObject({
    id,
    status: 'draft',
    site_id: SITE_ID,
    client_id: server.siteClient.client_id,
  });
}

describe('minter.py', () => {
  it('Minter.mint("nmdc:DataObject"): one id, returned as a string (test_mint_single, test_old_auth)', async () => {
    const body = jsonDumps({ schema_class: { id: 'nmdc:DataObject' }, how_many: 1 });
    expect(body).toBe('{"schema_class": {"id": "nmdc:DataObject"}, "how_many": 1}');
    const result = minted(await postMint(await siteClientToken(), 'nmdc:DataObject', 1), 1);
    expect(typeof result).toBe('string');
    expect(result).toContain('nmdc:dobj');
    expect(result).toMatch(new RegExp(idPatternOfClass('DataObject')!));
    await expectStoredDraftOfTheSite(result as string);
  });

  it('Minter.mint("nmdc:DataObject", count=3): a list of three distinct ids (test_mint_multiple)', async () => {
    const result = minted(await postMint(await siteClientToken(), 'nmdc:DataObject', 3), 3) as string[];
    expect(new Set(result).size).toBe(3);
    for (const id of result) {
      expect(id).toContain('nmdc:dobj');
      await expectStoredDraftOfTheSite(id);
    }
  });

  it('Minter.mint("nmdc:MassSpectrometry", count=2): the docstring example, typecode dgms', async () => {
    const result = minted(await postMint(await siteClientToken(), 'nmdc:MassSpectrometry', 2), 2) as string[];
    for (const id of result) expect(id).toMatch(new RegExp(idPatternOfClass('MassSpectrometry')!));
    expect(result.every((id) => id.startsWith('nmdc:dgms-11-'))).toBe(true);
  });

  it('the cached token mints again: one token, several calls', async () => {
    const token = await siteClientToken();
    const first = minted(await postMint(token, 'nmdc:Biosample', 1), 1);
    const second = minted(await postMint(token, 'nmdc:Biosample', 1), 1);
    expect(first).not.toBe(second);
  });

  it('an unknown nmdc_type is a 422 naming it, which raise_for_status turns into RuntimeError', async () => {
    const res = await postMint(await siteClientToken(), 'nmdc:Dataobject', 1);
    expect(res.status).toBe(422);
    expect(res.json).toEqual({ detail: 'Unknown schema class nmdc:Dataobject' });
  });

  it("NMDCAuth with a user's username and password: 403 with a detail saying site clients only", async () => {
    const token = await tokenFor([
      ['grant_type', 'password'],
      ['username', USER.username],
      ['password', USER.password],
    ]);
    const res = await postMint(token, 'nmdc:DataObject', 1);
    expect(res.status).toBe(403);
    expect(res.json.detail).toMatch(/site client/);
  });
});
