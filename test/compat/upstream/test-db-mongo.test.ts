/**
 * Port of the original's tests/test_api/test_db_mongo.py (v2.13.0), the two tests whose work an
 * endpoint does:
 *
 * - `OverlayDB.replace_or_insert_many` refusing records that share an id is the step of the
 *   original's `validate_json` (`POST /metadata/json:validate`) that catches a payload naming one
 *   id twice; the port sends the test's three copies of one field research site there.
 * - `check_mongo_ok_autoreconnect` is the database check behind `/health`'s `database` boolean;
 *   like the original's, it must answer true without writing anything.
 *
 * The others exercise the Python overlay class and pymongo on scratch collections of records that
 * are not the schema's (listed with the reason in README.md).
 */
import { describe, expect, it } from 'vitest';
import { withUpstreamServer, type UpstreamServer } from './support/harness.ts';
import { plainRequest } from './support/client.ts';

let server: UpstreamServer;
withUpstreamServer((started) => (server = started));

describe('tests/test_api/test_db_mongo.py', () => {
  it('test_db_mongo.py::test_overlaydb_duplicate_ids_replace_or_insert_many', async () => {
    // The test's records carry no `type`, which the schema requires (the original's validate_json
    // would stop at that before reaching the overlay): it is added so that only the ids are wrong.
    const site = {
      id: 'nmdc:frsite-11-s2dqk408',
      name: 'BESC-470-CL2_38_23',
      type: 'nmdc:FieldResearchSite',
    };
    expect(await server.count('field_research_site_set', { id: site.id })).toBe(0);
    const res = await plainRequest(server.url, 'POST', '/metadata/json:validate', {
      json: { field_research_site_set: [site, site, site] },
    });
    expect(res.status).toBe(200);
    expect(res.json.result).toBe('errors');
    const messages = res.json.detail.field_research_site_set as string[];
    // The original answers MongoDB's duplicate key error once; here each later copy is named.
    expect(messages).toHaveLength(2);
    for (const [i, message] of messages.entries()) {
      expect(message).toMatch(/^Duplicate id /);
      expect(message).toContain(site.id);
      expect(message).toContain(`/field_research_site_set/${i + 1}/id`);
    }
    // Once is fine.
    const once = await plainRequest(server.url, 'POST', '/metadata/json:validate', {
      json: { field_research_site_set: [site] },
    });
    expect(once.json).toEqual({ result: 'All Okay!' });
    expect(await server.count('field_research_site_set', { id: site.id })).toBe(0);
  });

  it('test_db_mongo.py::test_check_mongo_ok_autoreconnect', async () => {
    const before = await server.store.nonEmptyCollections();
    const res = await plainRequest(server.url, 'GET', '/health');
    expect(res.status).toBe(200);
    expect(res.json.database).toBe(true);
    // The check reads; it leaves no record behind (the original: none in `_runtime.healthcheck`).
    expect(await server.count('_runtime.healthcheck', { status: 'ok' })).toBe(0);
    expect(await server.store.nonEmptyCollections()).toEqual(before);
  });
});
