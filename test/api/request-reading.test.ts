import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import request from 'supertest';
import { pino } from 'pino';
import { createTestApp, type TestApp } from '../support/server.ts';
import type { Doc } from '../../src/store/port.ts';

let t: TestApp;
const logLines: string[] = [];

const biosample = (n: number): Doc => ({
  id: `nmdc:bsm-11-r${String(n).padStart(3, '0')}`,
  type: 'nmdc:Biosample',
  name: `Reading sample ${n}`,
  ecosystem_category: n % 2 ? 'Terrestrial' : 'Plants',
});
const biosamples = Array.from({ length: 30 }, (_, i) => biosample(i));
const ids = (docs: Doc[]) => docs.map((d) => d.id);

beforeAll(async () => {
  t = await createTestApp(
    {},
    { logger: pino({ level: 'debug' }, { write: (line: string) => void logLines.push(line) }) },
  );
  await t.store.upsertMany('biosample_set', biosamples);
  await t.searchIndex.index('biosample_set', biosamples);
});
afterAll(async () => t?.close());

describe('empty values are absent parameters', () => {
  it('answers the schema endpoint with empty filter and projection as an unfiltered, unprojected page', async () => {
    const res = await request(t.app)
      .get('/nmdcschema/biosample_set?filter=&max_page_size=20&projection=')
      .expect(200);
    expect(ids(res.body.resources)).toEqual(ids(biosamples.slice(0, 20)));
    expect(res.body.resources[0]).toEqual(biosamples[0]);
    expect(typeof res.body.next_page_token).toBe('string');
  });

  it('uses the default page size for an empty max_page_size', async () => {
    const res = await request(t.app)
      .get('/nmdcschema/biosample_set?filter=&max_page_size=&projection=')
      .expect(200);
    expect(res.body.resources).toHaveLength(20);
  });

  it('follows a page token sent with empty filter and projection', async () => {
    const first = await request(t.app)
      .get('/nmdcschema/biosample_set?filter=&max_page_size=25&projection=')
      .expect(200);
    const second = await request(t.app)
      .get('/nmdcschema/biosample_set')
      .query(`filter=&max_page_size=25&projection=&page_token=${first.body.next_page_token}`)
      .expect(200);
    expect(ids([...first.body.resources, ...second.body.resources])).toEqual(ids(biosamples));
    expect(second.body).not.toHaveProperty('next_page_token');
  });

  it('answers the compact finds with every parameter empty as the first default page', async () => {
    const res = await request(t.app)
      .get('/biosamples?filter=&search=&sort=&page=&per_page=&cursor=&group_by=&fields=')
      .expect(200);
    expect(res.body.meta).toMatchObject({ mongo_filter_dict: {}, count: 30, page: 1, per_page: 25 });
    expect(res.body.results).toHaveLength(25);
  });

  it('answers a record by id when the client sends an empty projection', async () => {
    const res = await request(t.app)
      .get(`/nmdcschema/biosample_set/${biosamples[3]!.id}?max_page_size=100&projection=`)
      .expect(200);
    expect(res.body).toEqual(biosamples[3]);
  });
});

describe('unknown query parameters are ignored', () => {
  it('ignores them on the finds, and an empty name from a leading "?&"', async () => {
    const res = await request(t.app)
      .get('/biosamples?&filter=ecosystem_category:Plants&foo=1&per_page=3')
      .expect(200);
    expect(res.body.meta).toMatchObject({
      mongo_filter_dict: { ecosystem_category: 'Plants' },
      count: 15,
      per_page: 3,
    });
    expect(res.body.results.every((r: Doc) => r.ecosystem_category === 'Plants')).toBe(true);
  });

  it('ignores them on fixed paths matched before templated ones', async () => {
    const version = await request(t.app).get('/nmdcschema/version?max_page_size=5').expect(200);
    expect(version.body).toMatch(/^\d+\.\d+\.\d+$/);
    const byId = await request(t.app).get(`/nmdcschema/ids/${biosamples[4]!.id}?projection=name`).expect(200);
    // /nmdcschema/ids/{doc_id} takes no projection: the whole record comes back.
    expect(byId.body).toEqual(biosamples[4]);
    const activity = await request(t.app).get('/activities/nmdc:wfmgas-11-none?per_page=5').expect(404);
    expect(activity.body).toEqual({ detail: 'Not found' });
  });

  it('ignores them on private operations, which still ask for a token', async () => {
    const res = await request(t.app).post('/sites/lab-1:generateCredentials?bogus=1').expect(401);
    expect(res.body.detail).toBe('Access token is invalid or missing. Please log in again.');
  });

  it('logs the ignored names at debug level, never their values', async () => {
    logLines.length = 0;
    await request(t.app).get('/studies?utm_source=newsletter-SECRETVALUE&per_page=1').expect(200);
    const entry = logLines.map((l) => JSON.parse(l)).find((l) => l.ignored_query_parameters);
    expect(entry).toMatchObject({ level: 20, ignored_query_parameters: ['utm_source'] });
    expect(logLines.join('\n')).not.toContain('SECRETVALUE');
  });
});

describe('repeated and malformed values', () => {
  it('keeps the last value of a repeated single-valued parameter', async () => {
    const res = await request(t.app).get('/biosamples?per_page=2&per_page=4').expect(200);
    expect(res.body.meta.per_page).toBe(4);
    expect(res.body.results).toHaveLength(4);
  });

  it('still refuses a value that is present but wrong, naming the parameter', async () => {
    const res = await request(t.app).get('/biosamples?per_page=many').expect(422);
    expect(res.body).toEqual({ detail: 'query.per_page must be integer' });
    const json = await request(t.app).get('/nmdcschema/biosample_set?filter=not-json').expect(422);
    expect(json.body.detail).toMatch(/^Filter is not valid JSON/);
  });

  it.each([
    ['search=soil', 'search= is not supported; use filter=<attribute>.search:<text> instead'],
    ['group_by=ecosystem_category', 'group_by= is not supported'],
  ])('refuses %s, which the original declares but never supported, with a pointer', async (param, detail) => {
    const res = await request(t.app).get(`/biosamples?${param}`).expect(422);
    expect(res.body).toEqual({ detail });
  });
});
