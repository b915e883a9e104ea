/**
 * nmdc_api_utilities (the NMDC Python client), metadata.py, and nmdc_automation's nmdcapi.py:
 * - `Metadata.validate_json(records)` posts the records with `requests.post(json=...)` and counts
 *   the validation as passed only when the answer's text is exactly `{"result":"All Okay!"}` with 200;
 * - `Metadata.submit_json(records)` posts them with its Bearer token and needs a 200;
 * - nmdc_automation's `minter`, `validate_metadata` and `submit_metadata` post `json.dumps(metadata)` as a
 *   site client (its JSON headers) and `raise_for_status`, then read `resp.json()`.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { USER, startCompatServer, type CompatServer } from './support/server.ts';
import { send, type WireResponse } from './support/wire.ts';
import { jsonDumps } from './support/python.ts';
import { PAGE_HEADERS, clientCredentialsForm, getToken } from './support/nmdc-api-utilities-client.ts';
import { jsonPostHeaders } from './support/nmdc-automation-client.ts';
import { Allowances } from '../../src/accounts/allowances.ts';

let server: CompatServer;

beforeAll(async () => {
  server = await startCompatServer();
});
afterAll(async () => server?.close());

const tokenFor = (form: Array<[string, string]>) => getToken(server.url, form);

const userToken = () =>
  tokenFor([
    ['grant_type', 'password'],
    ['username', USER.username],
    ['password', USER.password],
  ]);

function dataObject(suffix: string): Record<string, unknown> {
  return {
    id: `nmdc:dobj-11-cmp${suffix}`,
    type: 'nmdc:DataObject',
    name: `${suffix}.fastq.gz`,
    description: 'Raw reads',
    data_category: 'instrument_data',
    data_object_type: 'Metagenome Raw Reads',
  };
}

/** `Metadata.validate_json` / `submit_json`: `requests.post(url, headers=..., json=records)`. */
function postMetadata(target: string, records: unknown, token?: string): Promise<WireResponse> {
  const headers: Record<string, string> = { ...PAGE_HEADERS };
  if (token) headers.Authorization = `Bearer ${token}`;
  return send(server.url, { method: 'POST', target, headers, body: jsonDumps(records) });
}

describe('metadata.py', () => {
  it('Metadata.validate_json: a valid set answers exactly {"result":"All Okay!"} with 200', async () => {
    const res = await postMetadata('/metadata/json:validate', { data_object_set: [dataObject('v1')] });
    expect(res.status).toBe(200);
    expect(res.text).toBe('{"result":"All Okay!"}');
  });

  it('Metadata.validate_json: an invalid set answers 200 with the errors, which the client raises on', async () => {
    const bad = { ...dataObject('v2'), data_category: 'not a category' };
    const res = await postMetadata('/metadata/json:validate', { data_object_set: [bad] });
    expect(res.status).toBe(200);
    expect(res.text).not.toBe('{"result":"All Okay!"}');
    expect(res.json.result).toBe('errors');
    expect(res.json.detail.data_object_set.join('\n')).toMatch(/data_category/);
  });

  it('Metadata.submit_json: 403 without the allowance, 200 and stored with it', async () => {
    const token = await userToken();
    const records = { data_object_set: [dataObject('s1')] };
    const refused = await postMetadata('/metadata/json:submit', records, token);
    expect(refused.status).toBe(403);
    expect(refused.json).toEqual({ detail: 'Only specific users are allowed to submit json at this time.' });
    await new Allowances(server.store).create({ username: USER.username, action: '/metadata/json:submit' });
    const res = await postMetadata('/metadata/json:submit', records, token);
    expect(res.status, res.text).toBe(200);
    expect(res.json).toEqual({ type: 'success', detail: { run_id: expect.any(String) } });
    expect(await server.store.getById('data_object_set', 'nmdc:dobj-11-cmps1')).toEqual(dataObject('s1'));
  });
});

describe('nmdc_automation nmdcapi.py', () => {
  it('minter("nmdc:DataObject"): json.dumps of one schema class, answers a list whose first item is the id', async () => {
    const token = await tokenFor(clientCredentialsForm(server.siteClient));
    const res = await send(server.url, {
      method: 'POST',
      target: '/pids/mint',
      headers: jsonPostHeaders(`Bearer ${token}`),
      body: jsonDumps({ schema_class: { id: 'nmdc:DataObject' }, how_many: 1 }),
    });
    expect(res.status, res.text).toBe(200);
    expect(res.json).toHaveLength(1);
    expect(res.json[0]).toMatch(/^nmdc:dobj-11-[0-9a-z]+$/);
  });

  it('validate_metadata and submit_metadata as a site client holding the allowance', async () => {
    const token = await tokenFor(clientCredentialsForm(server.siteClient));
    const headers = jsonPostHeaders(`Bearer ${token}`);
    const metadata = { data_object_set: [dataObject('a1')] };
    const valid = await send(server.url, {
      method: 'POST',
      target: '/metadata/json:validate',
      headers,
      body: jsonDumps(metadata),
    });
    expect(valid.status).toBe(200);
    expect(valid.json).toEqual({ result: 'All Okay!' });
    await new Allowances(server.store).create({
      username: server.siteClient.client_id,
      action: '/metadata/json:submit',
    });
    const submitted = await send(server.url, {
      method: 'POST',
      target: '/metadata/json:submit',
      headers,
      body: jsonDumps(metadata),
    });
    expect(submitted.status, submitted.text).toBe(200);
    expect(submitted.json.type).toBe('success');
    expect(await server.store.getById('data_object_set', 'nmdc:dobj-11-cmpa1')).toMatchObject({
      id: 'nmdc:dobj-11-cmpa1',
    });
  });
});
