/**
 * Port of the original's tests/test_api/test_endpoints_util.py (v2.13.0):
 * `is_num_matching_docs_within_limit`, which decides whether a listing (`GET
 * /nmdcschema/{collection_name}`) answers every matching record at once or pages them. The
 * original calls the function; the port asks the listing, whose answer shows the decision: one
 * page without `next_page_token` when the matches fit in `max_page_size` (or when it is below 1,
 * which the original checks before calling the function), a first page and a token otherwise.
 */
import { describe, expect, it } from 'vitest';
import { withUpstreamServer, type UpstreamServer } from './support/harness.ts';
import { Faker } from './support/faker.ts';

let server: UpstreamServer;
const faker = new Faker();
withUpstreamServer((started) => (server = started));

const FILTER = { title: 'Test Study' };

/** `GET /nmdcschema/{collection}` with a JSON filter and a page size, as testuser. */
async function listing(collection: string, filter: object, maxPageSize: number) {
  const response = await server.userClient().request('GET', `/nmdcschema/${collection}`, {
    filter: JSON.stringify(filter),
    max_page_size: String(maxPageSize),
  });
  expect(response.status).toBe(200);
  return response.json as { resources: Array<{ id: string }>; next_page_token?: string | null };
}

describe('tests/test_api/test_endpoints_util.py', () => {
  it('test_endpoints_util.py::test_is_num_matching_docs_within_limit', async () => {
    // The fixture `seeded_db_for_filtered_counting`: ten studies titled "Test Study".
    expect(await server.count('study_set', FILTER)).toBe(0);
    const studies = faker.studies(10, FILTER);
    await server.add('study_set', studies);
    expect(await server.count('study_set', FILTER)).toBe(10);
    const ids = studies.map((s) => s.id).sort();

    // Vary the limit. Below 1 (the function refuses -1) the listing answers everything at once.
    for (const size of [-1, 0]) {
      const all = await listing('study_set', FILTER, size);
      expect(all.resources.map((r) => r.id).sort(), `max_page_size=${size}`).toEqual(ids);
      expect(all.next_page_token ?? null).toBeNull();
    }
    // 9: more match than fit, so a first page and a token for the rest.
    const first = await listing('study_set', FILTER, 9);
    expect(first.resources).toHaveLength(9);
    expect(typeof first.next_page_token).toBe('string');
    const rest = (
      await server.userClient().request('GET', '/nmdcschema/study_set', {
        page_token: first.next_page_token!,
        max_page_size: '9',
      })
    ).json;
    expect([...first.resources, ...rest.resources].map((r: { id: string }) => r.id).sort()).toEqual(ids);
    // 10 (exactly as many as match) and 11: one page, no token.
    for (const size of [10, 11]) {
      const page = await listing('study_set', FILTER, size);
      expect(page.resources.map((r) => r.id).sort(), `max_page_size=${size}`).toEqual(ids);
      expect(page.next_page_token ?? null).toBeNull();
    }

    // Vary the collection: nothing matches in an empty one, which fits any page.
    expect(await server.count('calibration_set')).toBe(0);
    const empty = await listing('calibration_set', {}, 0);
    expect(empty.resources).toEqual([]);
    expect(empty.next_page_token ?? null).toBeNull();
  });
});
