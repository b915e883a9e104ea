/**
 * nmdc_automation (NMDC workflow automation), nmdc_automation/api/nmdcapi.py: the object calls of
 * `NmdcRuntimeApi` (create_object, get_object, set_type, bump_time, list_objs) as the client
 * prepares them, headers and body included (`json.dumps` of its dicts, `None` as `null`, the
 * unused `id`/`self_uri` it sends, a naive `datetime.today().isoformat()`). Expected answers come
 * from the store; set_type's trigger firing is checked in the `jobs` collection.
 */
import { createHash, randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CompatServer } from './support/server.ts';
import { SITE_ID } from './support/server.ts';
import { send, type WireResponse } from './support/wire.ts';
import { jsonDumps } from './support/python.ts';
import { requestsRequote } from './support/nmdc-notebooks-clients.ts';
import { authedHeaders, startAutomationServer } from './support/nmdc-automation-client.ts';

let server: CompatServer;
/** The token `NmdcRuntimeApi.get_token` obtains with the site's client credentials. */
let siteToken: string;

beforeAll(async () => {
  ({ server, siteToken } = await startAutomationServer());
});
afterAll(async () => server?.close());

/** `datetime.today().isoformat()`: local time without a zone, microseconds. */
const pythonNow = () =>
  new Date()
    .toISOString()
    .replace('Z', '')
    .replace(/\.(\d{3})$/, '.$1417');

/**
 * `mimetypes.MimeTypes().guess_type(fn)` as create_object reads it: the type when there is no
 * encoding, else `application/<encoding>` (`.fastq.gz` gives `application/gzip`, `.fna` None).
 */
const MIME_OF: Record<string, string | null> = {
  'reads.fastq.gz': 'application/gzip',
  'contigs.fna': null,
  'stats.json': 'application/json',
};

/**
 * `NmdcRuntimeApi.create_object(fn, description, dataurl)`: the dict the client builds, in its key
 * order, posted with `data=json.dumps(d)`. `id` is the file's sha256 and `self_uri` "todo"; both
 * are the service's to set.
 */
function createObjectBody(name: string, size: number, description: string, dataurl: string) {
  const sha = createHash('sha256')
    .update(`${name} ${randomBytes(8).toString('hex')}`)
    .digest('hex');
  return {
    aliases: null,
    description,
    mime_type: MIME_OF[name] ?? null,
    name,
    access_methods: [{ access_id: null, access_url: { url: dataurl }, region: null, type: 'https' }],
    checksums: [{ checksum: sha, type: 'sha256' }],
    contents: null,
    created_time: pythonNow(),
    size,
    updated_time: null,
    version: null,
    id: sha,
    self_uri: 'todo',
  };
}

const createObject = (body: unknown) =>
  send(server.url, {
    method: 'POST',
    target: '/objects',
    headers: authedHeaders(siteToken),
    body: jsonDumps(body),
  });

/** `NmdcRuntimeApi.get_object(obj, decode)`: the description parsed into `metadata` when decode is set. */
async function getObject(
  obj: string,
  decode = false,
): Promise<{ res: WireResponse; data: Record<string, any> }> {
  const res = await send(server.url, {
    method: 'GET',
    target: `/objects/${obj}`,
    headers: authedHeaders(siteToken),
  });
  const data = { ...res.json };
  if (decode && 'description' in data) {
    try {
      data.metadata = JSON.parse(data.description);
    } catch {
      data.metadata = null;
    }
  }
  return { res, data };
}

/** `NmdcRuntimeApi.set_type(obj, typ)`: `PUT objects/{obj}/types` with `json.dumps([typ])`. */
const setType = (obj: string, typ: string) =>
  send(server.url, {
    method: 'PUT',
    target: `/objects/${obj}/types`,
    headers: authedHeaders(siteToken),
    body: jsonDumps([typ]),
  });

/** `NmdcRuntimeApi.bump_time(obj)`: `PATCH objects/{obj}` with `{"created_time": <now>}`. */
const bumpTime = (obj: string, now = pythonNow()) =>
  send(server.url, {
    method: 'PATCH',
    target: `/objects/${obj}`,
    headers: authedHeaders(siteToken),
    body: jsonDumps({ created_time: now }),
  });

/**
 * `NmdcRuntimeApi.list_objs(filt, max_page_size)` through `_page_query`: an f-string URL with
 * `json.dumps(filt)` unencoded (requests requotes it), `&page_token=<token>` appended to the
 * first URL while `next_page_token` is truthy; it stops at an answer without `resources`.
 */
async function listObjs(filt?: unknown, maxPageSize = 40) {
  let url = `/objects?max_page_size=${maxPageSize}`;
  if (filt) url += `&filter=${jsonDumps(filt)}`;
  const origUrl = url;
  const targets: string[] = [];
  const pages: WireResponse[] = [];
  const results: Array<Record<string, any>> = [];
  for (let page = 0; page < 100; page++) {
    const target = requestsRequote(url);
    targets.push(target);
    const res = await send(server.url, { method: 'GET', target, headers: authedHeaders(siteToken) });
    pages.push(res);
    if (!Array.isArray(res.json?.resources)) break;
    results.push(...res.json.resources);
    if (!res.json.next_page_token) break;
    url = `${origUrl}&page_token=${res.json.next_page_token}`;
  }
  return { targets, pages, results };
}

/** The UTC instant of a naive Python time, as the service keeps it. */
const utc = (naive: string) => new Date(`${naive}Z`).toISOString();

describe('nmdc_automation/api/nmdcapi.py NmdcRuntimeApi object calls', () => {
  it('create_object(fn, description, dataurl): 201 with a minted id (not the sha256 sent), the nulls and self_uri "todo" ignored', async () => {
    const dataurl = 'https://data.microbiomedata.org/data/nmdc:omprc-11-abc123/reads.fastq.gz';
    const body = createObjectBody('reads.fastq.gz', 1_048_576, 'Raw reads', dataurl);
    const res = await createObject(body);
    expect(res.status, res.text).toBe(201);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    const host = new URL(server.url).host;
    expect(res.json).toEqual({
      id: expect.stringMatching(/^sys0\w{12}$/),
      name: 'reads.fastq.gz',
      self_uri: `drs://${host}/${res.json.id}`,
      size: 1_048_576,
      created_time: utc(body.created_time),
      mime_type: 'application/gzip',
      checksums: body.checksums,
      access_methods: [{ type: 'https', access_url: { url: dataurl } }],
      description: 'Raw reads',
    });
    expect(res.json.id).not.toBe(body.id);
    const stored = await server.store.getById('objects', res.json.id);
    expect(stored).toMatchObject({ id: res.json.id, _mgr_site: SITE_ID, checksums: body.checksums });
    expect(stored).not.toHaveProperty('self_uri');

    // A file whose type mimetypes cannot guess: "mime_type": null, so none.
    const fna = await createObject(createObjectBody('contigs.fna', 42, 'Contigs', `${dataurl}.fna`));
    expect(fna.status, fna.text).toBe(201);
    expect(fna.json).not.toHaveProperty('mime_type');
    // The same file again (its .sha256 reused): the original's 409, which the client raises on.
    const again = await createObject({ ...body, created_time: pythonNow() });
    expect(again.status).toBe(409);
    expect(again.json).toEqual({
      detail: `provided checksum matches existing object ${res.json.id}: sha256:${body.checksums[0]!.checksum}`,
    });
  });

  it('get_object(obj, decode=True): the object, its JSON description decoded into metadata', async () => {
    const metadata = { activity_id: 'nmdc:wfmgas-11-abc123.1', type: 'nmdc:MetagenomeAssembly' };
    const created = await createObject(
      createObjectBody('stats.json', 512, jsonDumps(metadata), 'https://data.microbiomedata.org/stats.json'),
    );
    expect(created.status, created.text).toBe(201);
    const { res, data } = await getObject(created.json.id, true);
    expect(res.status, res.text).toBe(200);
    expect(res.json).toEqual(created.json);
    expect(data.metadata).toEqual(metadata);
    const missing = await getObject('sys0nothere00000');
    expect(missing.res.status).toBe(404);
    expect(missing.res.json).toEqual({ detail: 'Object sys0nothere00000 not found' });
  });

  it('set_type(obj, "metagenome_raw_paired_end_reads"): the object with its types; the seed trigger makes one metag-1.0.0 job, however often it is called', async () => {
    const created = await createObject(
      createObjectBody(
        'reads.fastq.gz',
        2048,
        'Reads to analyse',
        'https://data.microbiomedata.org/r.fastq.gz',
      ),
    );
    const id = created.json.id as string;
    const res = await setType(id, 'metagenome_raw_paired_end_reads');
    expect(res.status, res.text).toBe(200);
    expect(res.json).toEqual({ ...created.json, types: ['metagenome_raw_paired_end_reads'] });

    const jobs = await server.store.find('jobs', { 'config.object_id': id });
    expect(jobs).toEqual([
      {
        id: expect.stringMatching(/^nmdc:sys0\w{12}$/),
        workflow: expect.objectContaining({ id: 'metag-1.0.0', capability_ids: expect.any(Array) }),
        config: { object_id: id },
        claims: [],
        created_at: expect.any(String),
      },
    ]);
    const job = await send(server.url, {
      method: 'GET',
      target: `/jobs/${jobs[0]!.id}`,
      headers: authedHeaders(siteToken),
    });
    expect(job.status, job.text).toBe(200);
    expect(job.json).toEqual(jobs[0]);

    expect((await setType(id, 'metagenome_raw_paired_end_reads')).status).toBe(200);
    expect((await server.store.find('jobs', { 'config.object_id': id })).map((j) => j.id)).toEqual([
      jobs[0]!.id,
    ]);

    // A type not in /object_types (the client's own test uses "metadatain"): 422 naming it.
    const unknown = await setType(id, 'metadatain');
    expect(unknown.status).toBe(422);
    expect(unknown.json).toEqual({ detail: 'unknown object type ids: metadatain' });
  });

  it('bump_time(obj): created_time moved to now, updated_time set, the rest kept', async () => {
    const created = await createObject(
      createObjectBody('contigs.fna', 4096, 'Contigs', 'https://data.microbiomedata.org/contigs.fna'),
    );
    const now = pythonNow();
    const res = await bumpTime(created.json.id, now);
    expect(res.status, res.text).toBe(200);
    expect(res.json).toEqual({ ...created.json, created_time: utc(now), updated_time: expect.any(String) });
    expect((await getObject(created.json.id)).res.json).toEqual(res.json);
  });

  it('list_objs(filt, max_page_size=40): every matching object once, over pages with &page_token appended', async () => {
    const description = `batch-${randomBytes(4).toString('hex')}`;
    const made: string[] = [];
    for (let i = 0; i < 45; i++) {
      const res = await createObject(
        createObjectBody('reads.fastq.gz', i, description, `https://data.microbiomedata.org/${i}.fastq.gz`),
      );
      expect(res.status, res.text).toBe(201);
      made.push(res.json.id);
    }
    const { targets, pages, results } = await listObjs({ description });
    expect(targets[0]).toBe(
      `/objects?max_page_size=40&filter=%7B%22description%22:%20%22${description}%22%7D`,
    );
    expect(pages.map((p) => p.status)).toEqual([200, 200]);
    expect(pages[0]!.json.resources).toHaveLength(40);
    expect(pages[1]!.json).not.toHaveProperty('next_page_token');
    expect(targets[1]).toBe(`${targets[0]}&page_token=${pages[0]!.json.next_page_token}`);
    expect(results.map((o) => o.id)).toEqual([...made].sort());
    expect(results.every((o) => o.description === description)).toBe(true);

    // Without a filter: every object, the site's and any other.
    const all = await listObjs();
    expect(all.results.map((o) => o.id)).toEqual((await server.store.find('objects', {})).map((o) => o.id));
  });
});
