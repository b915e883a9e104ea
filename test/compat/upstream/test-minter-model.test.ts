/**
 * Port of the original's tests/unit/test_minter_model.py (v2.13.0). The original checks its test
 * fixtures against the minter's configuration tables: the minting request (its first service,
 * requester and schema class) names entries of those tables, and a draft identifier
 * (`nmdc:bsm-11-z8x8p723`) has a known typecode and shoulder. Here the tables are what the
 * endpoints answer: `/nmdcschema/typecodes` lists the typecodes, and a minted id's resolution
 * names its typecode and its shoulder (which names the minting service it is assigned to).
 */
import { describe, expect, it } from 'vitest';
import { PIDS } from '../../../src/pids/minter.ts';
import { withUpstreamServer, type UpstreamServer } from './support/harness.ts';

/** The original's first schema class (`schema_classes()[0]`). */
const SCHEMA_CLASS = 'nmdc:Biosample';

let server: UpstreamServer;
withUpstreamServer((started) => (server = started));

type Typecode = { id: string; schema_class: string; name: string };

const typecodes = async () =>
  (await server.userClient().request('GET', '/nmdcschema/typecodes')).json as Typecode[];

/** One id minted (`how_many` 1) and resolved as the site client; its store record removed afterwards. */
async function mintedIdentifier(): Promise<Record<string, any>> {
  const client = server.siteClient();
  const response = await client.mintId(SCHEMA_CLASS, 1);
  expect(response.status).toBe(200);
  const [id] = response.json as string[];
  try {
    return (await client.request('GET', `/pids/resolve/${id}`)).json;
  } finally {
    await server.store.deleteMany(PIDS, { id: { $in: [id] } });
  }
}

describe('tests/unit/test_minter_model.py', () => {
  it('test_minter_model.py::test_minting_request', async () => {
    // The request's schema class has a typecode, so the minter accepts it from the site (the
    // requester) with `how_many` above 0; its shoulder belongs to the minting service.
    const listed = await typecodes();
    expect(listed.map((t) => t.schema_class)).toContain(SCHEMA_CLASS);
    const identifier = await mintedIdentifier();
    expect(identifier.typecode.schema_class).toBe(SCHEMA_CLASS);
    expect(identifier.shoulder.assigned_to).toBe('nmdc:minter_service_11');
  });

  it('test_minter_model.py::test_draft_identifier', async () => {
    const identifier = await mintedIdentifier();
    expect(identifier.status).toBe('draft');
    expect(identifier.name).toMatch(/^nmdc:[a-z]{2,6}-..-.*$/);
    expect(identifier.name).toBe(identifier.id);
    const listed = await typecodes();
    expect(listed.map((t) => t.id)).toContain(identifier.typecode.id);
    expect(identifier.typecode).toEqual(listed.find((t) => t.id === identifier.typecode.id));
    // The shoulder named `11`, as the original's fixture's.
    expect(identifier.shoulder).toMatchObject({ id: 'nmdc:minter_shoulder_11', name: '11' });
    expect(identifier.name.startsWith(`nmdc:${identifier.typecode.name}-${identifier.shoulder.name}-`)).toBe(
      true,
    );
  });
});
