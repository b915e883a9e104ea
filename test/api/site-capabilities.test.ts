/**
 * Site writes through the whole app: `PATCH /sites/{site_id}` and `GET/PUT
 * /sites/{site_id}/capabilities`, for a site's administrator and a runtime administrator, refused
 * (403) for other users and site clients, 404 for an unknown site, 422 for capabilities the
 * workflow catalog does not hold or fields that may not change.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import request from 'supertest';
import { setBcryptCost } from '../../src/accounts/index.ts';
import { createTestApp, type TestApp, newSiteClient, passwordToken } from '../support/server.ts';

setBcryptCost(4);

const ADMIN = { username: 'caps-root', password: 'Vq7-tundra-mosaic-41-pelican' };
const OWNER = { username: 'caps-owner', password: 'Kx2-granite-lantern-88-osprey' };
const OTHER = { username: 'caps-other', password: 'Zr9-meadow-compass-17-heron' };

let t: TestApp;
let admin: Record<string, string>;
let owner: Record<string, string>;
let other: Record<string, string>;
let siteClient: Record<string, string>;
let siteSerial = 0;

const bearer = (token: string) => ({ Authorization: `Bearer ${token}` });

/** A new site administered by OWNER. */
async function newSite(): Promise<string> {
  const id = `caps-site-${++siteSerial}`;
  const res = await request(t.app).post('/sites').set(owner).send({ id });
  expect(res.status, res.text).toBe(201);
  return id;
}

beforeAll(async () => {
  t = await createTestApp({ ADMIN_USERNAME: ADMIN.username, ADMIN_PASSWORD: ADMIN.password });
  admin = bearer(await passwordToken(t.app, ADMIN.username, ADMIN.password));
  for (const user of [OWNER, OTHER])
    expect((await request(t.app).post('/users').set(admin).send(user)).status).toBe(201);
  owner = bearer(await passwordToken(t.app, OWNER.username, OWNER.password));
  other = bearer(await passwordToken(t.app, OTHER.username, OTHER.password));
  siteClient = (await newSiteClient(t.app, owner, `caps-site-${++siteSerial}`)).client;
});
afterAll(async () => t.close());

describe('PUT /sites/{site_id}/capabilities', () => {
  it("replaces the site's capabilities for its administrator, repeats dropped, and GET answers them", async () => {
    const site = await newSite();
    const put = await request(t.app)
      .put(`/sites/${site}/capabilities`)
      .set(owner)
      .send(['metag-1.0.0', 'readqc-1.0.6', 'metag-1.0.0']);
    expect(put.status, put.text).toBe(200);
    expect(put.body).toEqual(['metag-1.0.0', 'readqc-1.0.6']);
    expect((await request(t.app).get(`/sites/${site}/capabilities`)).body).toEqual([
      'metag-1.0.0',
      'readqc-1.0.6',
    ]);
    expect((await request(t.app).get(`/sites/${site}`)).body).toEqual({
      id: site,
      capability_ids: ['metag-1.0.0', 'readqc-1.0.6'],
    });
    // Replaced as a whole, to nothing too.
    const emptied = await request(t.app).put(`/sites/${site}/capabilities`).set(owner).send([]);
    expect(emptied.body).toEqual([]);
    expect((await request(t.app).get(`/sites/${site}`)).body.capability_ids).toEqual([]);
  });

  it('lets a runtime administrator change any site', async () => {
    const site = await newSite();
    const res = await request(t.app).put(`/sites/${site}/capabilities`).set(admin).send(['test']);
    expect(res.status, res.text).toBe(200);
    expect(res.body).toEqual(['test']);
  });

  it('answers 422 naming the ids the catalog does not hold, and changes nothing', async () => {
    const site = await newSite();
    await request(t.app).put(`/sites/${site}/capabilities`).set(owner).send(['test']);
    const res = await request(t.app)
      .put(`/sites/${site}/capabilities`)
      .set(owner)
      .send(['metag-1.0.0', 'gpu', 'quantum']);
    expect(res.status).toBe(422);
    expect(res.body).toEqual({
      detail: 'Unknown capability ids (not in the workflow catalog, see GET /capabilities): gpu, quantum',
    });
    expect((await request(t.app).get(`/sites/${site}/capabilities`)).body).toEqual(['test']);
  });

  it('answers 422 for a body that is not a list of ids', async () => {
    const site = await newSite();
    const res = await request(t.app)
      .put(`/sites/${site}/capabilities`)
      .set(owner)
      .send({ ids: ['test'] });
    expect(res.status).toBe(422);
    expect(JSON.stringify(res.body.detail)).toMatch(/array/);
  });

  it('answers 403 to a user who does not administer the site and to a site client', async () => {
    const site = await newSite();
    const byOther = await request(t.app).put(`/sites/${site}/capabilities`).set(other).send(['test']);
    expect(byOther.status).toBe(403);
    expect(byOther.body).toEqual({ detail: `You are not an administrator of site ${site}` });
    const byClient = await request(t.app).put(`/sites/${site}/capabilities`).set(siteClient).send(['test']);
    expect(byClient.status).toBe(403);
    expect(byClient.body).toEqual({ detail: 'This operation needs a user login, not a site client' });
    expect((await request(t.app).get(`/sites/${site}/capabilities`)).body).toEqual([]);
  });

  it('answers 401 without a token, and 404 naming an unknown site', async () => {
    expect((await request(t.app).put('/sites/caps-site-1/capabilities').send(['test'])).status).toBe(401);
    const res = await request(t.app).put('/sites/no-such-site/capabilities').set(admin).send(['test']);
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ detail: "No site with id 'no-such-site'" });
    const read = await request(t.app).get('/sites/no-such-site/capabilities');
    expect(read.status).toBe(404);
    expect(read.body).toEqual({ detail: "No site with id 'no-such-site'" });
  });
});

describe('PATCH /sites/{site_id}', () => {
  it('sets capability_ids and answers the site; GET /sites/{site_id} agrees', async () => {
    const site = await newSite();
    const res = await request(t.app)
      .patch(`/sites/${site}`)
      .set(owner)
      .send({ capability_ids: ['mgann-1.0.0', 'mags-1.0.4'] });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toEqual({ id: site, capability_ids: ['mgann-1.0.0', 'mags-1.0.4'] });
    expect((await request(t.app).get(`/sites/${site}`)).body).toEqual(res.body);
    // Then a PUT, then the PATCH's view again: each sees the other's write.
    await request(t.app).put(`/sites/${site}/capabilities`).set(owner).send(['test']);
    const empty = await request(t.app).patch(`/sites/${site}`).set(owner).send({});
    expect(empty.status).toBe(200);
    expect(empty.body).toEqual({ id: site, capability_ids: ['test'] });
  });

  it('answers 422 for a field that may not change, naming it', async () => {
    const site = await newSite();
    const res = await request(t.app).patch(`/sites/${site}`).set(owner).send({ id: 'renamed' });
    expect(res.status).toBe(422);
    expect(JSON.stringify(res.body.detail)).toMatch(/id/);
    expect((await request(t.app).get(`/sites/${site}`)).body).toEqual({ id: site, capability_ids: [] });
    expect((await request(t.app).get('/sites/renamed')).body).toEqual({ detail: 'Not found' });
  });

  it('answers 422 naming unknown capabilities, 403 to others, 404 for an unknown site', async () => {
    const site = await newSite();
    const unknown = await request(t.app)
      .patch(`/sites/${site}`)
      .set(owner)
      .send({ capability_ids: ['gpu'] });
    expect(unknown.status).toBe(422);
    expect(unknown.body.detail).toMatch(/: gpu$/);
    const byOther = await request(t.app).patch(`/sites/${site}`).set(other).send({ capability_ids: [] });
    expect(byOther.status).toBe(403);
    expect(byOther.body).toEqual({ detail: `You are not an administrator of site ${site}` });
    const byClient = await request(t.app)
      .patch(`/sites/${site}`)
      .set(siteClient)
      .send({ capability_ids: [] });
    expect(byClient.status).toBe(403);
    expect(byClient.body).toEqual({ detail: 'This operation needs a user login, not a site client' });
    const missing = await request(t.app).patch('/sites/no-such-site').set(admin).send({ capability_ids: [] });
    expect(missing.status).toBe(404);
    expect(missing.body).toEqual({ detail: "No site with id 'no-such-site'" });
  });
});
