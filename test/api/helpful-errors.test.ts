/**
 * Refusals that say what to do instead: a JSON filter sent to a compact find, sort keys no record
 * can have, a method the path does not take, headers that are too large, a body of the wrong media
 * type, an unknown `/queries:run` command; and the contract served as YAML.
 */
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import request from 'supertest';
import YAML from 'yaml';
import { passwordToken, startTestServer, type TestServer } from '../support/server.ts';

const ADMIN = { username: 'errors-admin', password: 'plum kettle orbit meadow' };
let t: TestServer;
let auth: { Authorization: string };

beforeAll(async () => {
  t = await startTestServer({ ADMIN_USERNAME: ADMIN.username, ADMIN_PASSWORD: ADMIN.password });
  await t.store.upsertMany('biosample_set', [
    { id: 'nmdc:bsm-11-e0001', type: 'nmdc:Biosample', name: 'Plant root', ecosystem_category: 'Plants' },
  ]);
  auth = { Authorization: `Bearer ${await passwordToken(t.app, ADMIN.username, ADMIN.password)}` };
});
afterAll(async () => t?.close());

describe('a JSON filter on a compact find', () => {
  it('is refused with the endpoint that takes JSON, instead of a count of 0', async () => {
    const res = await request(t.app).get('/biosamples').query({ filter: '{"ecosystem_category": "Plants"}' });
    expect(res.status).toBe(400);
    expect(res.body.detail).toContain('compact syntax attribute:value');
    expect(res.body.detail).toContain('GET /nmdcschema/biosample_set?filter=<JSON>');
    // The same records, asked the way the hint says.
    const json = await request(t.app)
      .get('/nmdcschema/biosample_set')
      .query({ filter: '{"ecosystem_category": "Plants"}' })
      .expect(200);
    expect(json.body.resources.map((r: { id: string }) => r.id)).toEqual(['nmdc:bsm-11-e0001']);
  });

  it('names the collection template on the planned processes, which span several', async () => {
    const res = await request(t.app).get('/planned_processes').query({ filter: ' {"name": "x"}' });
    expect(res.status).toBe(400);
    expect(res.body.detail).toContain('/nmdcschema/{collection_name}?filter=<JSON>');
  });

  it('leaves compact filters with braces inside values alone', async () => {
    const res = await request(t.app).get('/biosamples').query({ filter: 'name:{x}' }).expect(200);
    expect(res.body.meta.mongo_filter_dict).toEqual({ name: '{x}' });
  });
});

describe('sort keys', () => {
  it('refuses -name with the descending form', async () => {
    const res = await request(t.app).get('/biosamples?sort=-name').expect(422);
    expect(res.body.detail).toBe(
      'Unknown sort field "-name": records of biosample_set have no field "-name". For descending order write name:desc. ' +
        'Sort must be of form: attribute[:asc|:desc][,attribute[:asc|:desc]]*',
    );
  });

  it('refuses a field no record can have, suggesting the near names', async () => {
    const typo = await request(t.app).get('/biosamples?sort=lat_lon.lattitude:desc').expect(422);
    expect(typo.body.detail).toContain(
      'Unknown sort field "lat_lon.lattitude": "lat_lon" has no field "lattitude".',
    );
    expect(typo.body.detail).toContain('Did you mean "latitude"?');
    const swapped = await request(t.app).get('/studies?sort=nmae').expect(422);
    expect(swapped.body.detail).toContain('Did you mean "name"?');
    const reference = await request(t.app).get('/biosamples?sort=associated_studies.name').expect(422);
    expect(reference.body.detail).toContain(
      '"associated_studies" holds plain values or ids of other records, not objects with a field "name"',
    );
  });

  it('accepts schema fields, nested ones and array positions', async () => {
    for (const sort of [
      'name:desc',
      'depth.has_numeric_value',
      'env_broad_scale.term.name:asc',
      'lat_lon.latitude,id',
    ]) {
      const res = await request(t.app).get('/biosamples').query({ sort });
      expect(res.status, `${sort}: ${res.text}`).toBe(200);
    }
    await request(t.app).get('/studies?sort=has_credit_associations.0.applies_to_person.name').expect(200);
    await request(t.app).get('/planned_processes?sort=ended_at_time:desc').expect(200);
  });

  it('refuses a direction other than asc or desc with 400 (as the original), naming the key', async () => {
    const res = await request(t.app).get('/biosamples?sort=name:down').expect(400);
    expect(res.body.detail).toContain('Sort direction "down" of "name" must be asc or desc.');
  });

  it('checks a cursor walk the same way', async () => {
    const res = await request(t.app).get('/biosamples?cursor=*&sort=colour').expect(422);
    expect(res.body.detail).toContain('Unknown sort field "colour"');
  });
});

describe('methods a path does not take', () => {
  it('answer 405 with Allow', async () => {
    const res = await request(t.app).post('/version').expect(405);
    expect(res.headers.allow).toBe('GET, HEAD, OPTIONS');
    expect(res.body).toEqual({
      detail: 'Method POST is not allowed on /version; it takes GET, HEAD, OPTIONS',
    });
    const del = await request(t.app).delete('/biosamples/nmdc:bsm-11-e0001').expect(405);
    expect(del.headers.allow).toBe('GET, HEAD, OPTIONS');
    const put = await request(t.app).put('/jobs/nmdc:job-1:claim').expect(405);
    expect(put.headers.allow).toBe('POST, OPTIONS');
  });

  it('OPTIONS answers the methods', async () => {
    const res = await request(t.app).options('/queries:run').expect(200);
    expect(res.headers.allow).toContain('POST');
  });

  it('unknown paths and unknown records stay 404', async () => {
    expect((await request(t.app).post('/no/such/path').expect(404)).body).toEqual({ detail: 'Not found' });
    expect((await request(t.app).get('/biosamples/nmdc:bsm-11-none').expect(404)).body).toEqual({
      detail: 'Not found',
    });
  });
});

/** Sends raw bytes and reads the whole answer (the server closes the connection). */
function raw(url: string, text: string): Promise<string> {
  const { port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(port), '127.0.0.1', () => socket.write(text));
    let out = '';
    socket.setEncoding('utf8');
    socket.on('data', (chunk) => (out += chunk));
    socket.on('end', () => resolve(out));
    socket.on('error', reject);
  });
}

describe('requests the HTTP parser refuses', () => {
  it('431 for headers beyond the limit, with a JSON detail', async () => {
    const answer = await raw(
      t.url,
      `GET /version HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`,
    );
    expect(answer).toMatch(/^HTTP\/1\.1 431 Request Header Fields Too Large\r\n/);
    expect(answer).toContain('Content-Type: application/json');
    const body = JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4));
    expect(body.detail).toContain('larger than the limit of 16384 bytes');
  });

  it('400 for a malformed request line, with a JSON detail', async () => {
    const answer = await raw(t.url, 'NOT HTTP AT ALL\r\n\r\n');
    expect(answer).toMatch(/^HTTP\/1\.1 400 Bad Request\r\n/);
    expect(JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4)).detail).toMatch(
      /^Malformed HTTP request/,
    );
  });
});

describe('415 names the media types expected', () => {
  it('for a JSON endpoint sent text', async () => {
    const res = await request(t.app)
      .post('/metadata/json:validate')
      .set('Content-Type', 'text/plain')
      .send('{}')
      .expect(415);
    expect(res.body).toEqual({
      detail:
        'Content-Type text/plain is not accepted by POST /metadata/json:validate; send application/json',
    });
  });

  it('for a body without a Content-Type', async () => {
    const res = await request(t.app).post('/metadata/json:validate').expect(415);
    expect(res.body).toEqual({
      detail:
        'A body without a Content-Type header is not accepted by POST /metadata/json:validate; send application/json',
    });
  });

  it('for a form sent to /queries:run', async () => {
    const res = await request(t.app)
      .post('/queries:run')
      .set(auth)
      .type('form')
      .send({ find: 'x' })
      .expect(415);
    expect(res.body.detail).toBe(
      'Content-Type application/x-www-form-urlencoded is not accepted by POST /queries:run; send application/json',
    );
  });
});

describe('an unknown /queries:run command', () => {
  it('is a 422 listing the commands', async () => {
    const res = await request(t.app)
      .post('/queries:run')
      .set(auth)
      .send({ frob: 'biosample_set' })
      .expect(422);
    expect(res.body).toEqual({
      detail:
        'Unknown command: the body must name one of the commands find, getMore, count, aggregate, update, delete, explain ' +
        '(e.g. {"find": "biosample_set", "filter": {}})',
    });
  });

  it('a body that is no object says so once', async () => {
    const res = await request(t.app).post('/queries:run').set(auth).send([]).expect(422);
    expect(res.body).toEqual({ detail: 'body must be object' });
  });
});

describe('the contract as YAML', () => {
  it('/openapi.yaml is the document /openapi.json serves', async () => {
    const yaml = await request(t.app).get('/openapi.yaml').expect(200);
    expect(yaml.headers['content-type']).toMatch(/^application\/yaml/);
    const json = await request(t.app).get('/openapi.json').expect(200);
    expect(YAML.parse(yaml.text)).toEqual(json.body);
    const legacy = await request(t.app).get('/openapi-1.2.0.yaml').expect(200);
    expect(YAML.parse(legacy.text).info.version).toBe('1.2.0');
  });
});

describe('the two paging vocabularies', () => {
  it('are explained in the descriptions of the groups that use them, in both API versions', async () => {
    const current = (await request(t.app).get('/openapi.json').expect(200)).body;
    const legacy = (await request(t.app).get('/openapi-1.2.0.json').expect(200)).body;
    const tag = (doc: { tags: Array<{ name: string; description: string }> }, name: string) =>
      doc.tags.find((x) => x.name === name)!.description;
    for (const text of [tag(current, 'Metadata access'), tag(legacy, 'find'), tag(legacy, 'metadata')]) {
      expect(text).toContain('`per_page`');
      expect(text).toContain('`max_page_size`');
      expect(text).toContain('ignored');
    }
    expect(tag(current, 'Workflow management')).toContain('`max_page_size` (up to 100000');
    const perPage = current.components.parameters.PerPage;
    expect(perPage.description).toContain('take `max_page_size` instead');
  });
});
