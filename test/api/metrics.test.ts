/**
 * `GET /metrics`: Prometheus text with request counts and durations by route template and status,
 * the store's records and bytes per collection, index lag and queue depths.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import request from 'supertest';
import { createTestApp, type TestApp } from '../support/server.ts';
import { createMetrics } from '../../src/http/metrics.ts';
import { gaveWay } from '../../src/turns.ts';

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
  await t.store.upsertMany('biosample_set', [
    { id: 'nmdc:bsm-11-m0001', type: 'nmdc:Biosample', name: 'One' },
    { id: 'nmdc:bsm-11-m0002', type: 'nmdc:Biosample', name: 'Two' },
  ]);
  await t.store.upsertMany('jobs', [
    { id: 'nmdc:sys0j1', workflow: { id: 'w' }, config: {}, claims: [] },
    {
      id: 'nmdc:sys0j2',
      workflow: { id: 'w' },
      config: {},
      claims: [{ op_id: 'nmdc:sys0o1', site_id: 's' }],
    },
  ]);
  await t.store.upsertMany('operations', [{ id: 'nmdc:sys0o1', done: false, metadata: {} }]);
});
afterAll(async () => t?.close());

/** The value of one sample line, by metric name and exact label text. */
function sample(text: string, name: string, labels: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${name}{${labels}} `));
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(' ') + 1));
}

describe('GET /metrics', () => {
  it('counts and times requests by method, route template and status', async () => {
    await request(t.app).get('/biosamples/nmdc:bsm-11-m0001').expect(200);
    await request(t.app).get('/biosamples/nmdc:bsm-11-m0002').expect(200);
    await request(t.app).get('/biosamples/nmdc:bsm-11-none').expect(404);
    await request(t.app).get('/nmdcschema/biosample_set?max_page_size=1').expect(200);
    await request(t.app).get('/no/such/thing').expect(404);
    const res = await request(t.app).get('/metrics').expect(200);
    expect(res.headers['content-type']).toBe('text/plain; version=0.0.4; charset=utf-8');
    const text = res.text;
    expect(text).toContain('# TYPE nmdc_http_requests_total counter');
    expect(
      sample(text, 'nmdc_http_requests_total', 'method="GET",route="/biosamples/{sample_id}",status="200"'),
    ).toBe(2);
    expect(
      sample(text, 'nmdc_http_requests_total', 'method="GET",route="/biosamples/{sample_id}",status="404"'),
    ).toBe(1);
    expect(
      sample(
        text,
        'nmdc_http_requests_total',
        'method="GET",route="/nmdcschema/{collection_name}",status="200"',
      ),
    ).toBe(1);
    expect(sample(text, 'nmdc_http_requests_total', 'method="GET",route="unmatched",status="404"')).toBe(1);
    // Raw paths never become labels.
    expect(text).not.toContain('nmdc:bsm-11-m0001');
    expect(
      sample(
        text,
        'nmdc_http_request_duration_seconds_count',
        'method="GET",route="/biosamples/{sample_id}",status="200"',
      ),
    ).toBe(2);
    expect(
      sample(
        text,
        'nmdc_http_request_duration_seconds_bucket',
        'le="30",method="GET",route="/biosamples/{sample_id}",status="200"',
      ),
    ).toBe(2);
  });

  it('reports records and bytes per collection, index lag and queue depths', async () => {
    const text = (await request(t.app).get('/metrics').expect(200)).text;
    expect(sample(text, 'nmdc_collection_records', 'collection="biosample_set"')).toBe(2);
    expect(
      sample(text, 'nmdc_collection_bytes', 'collection="biosample_set",kind="records"'),
    ).toBeGreaterThan(0);
    expect(
      sample(text, 'nmdc_collection_bytes', 'collection="biosample_set",kind="indexes"'),
    ).toBeGreaterThanOrEqual(0);
    expect(sample(text, 'nmdc_index_pending_changes', 'index="search",engine="sqlite-fts5"')).toBe(0);
    // (The trigger dispatcher of the app drains firings as they come; none were queued.)
    expect(sample(text, 'nmdc_queue_depth', 'queue="trigger_firings_pending"')).toBe(0);
    expect(sample(text, 'nmdc_queue_depth', 'queue="jobs_unclaimed"')).toBe(1);
    expect(sample(text, 'nmdc_queue_depth', 'queue="operations_running"')).toBe(1);
    expect(text).toMatch(/^nmdc_process_resident_memory_bytes \d+/m);
    expect(text).toMatch(/^nmdc_http_requests_in_flight 1$/m);
  });

  it('tells how often and how long bulk work gave way to other requests', async () => {
    const before = { ...gaveWay };
    // As two waits of bulk work would count them (turns.ts).
    gaveWay.times += 2;
    gaveWay.ms += 250;
    const text = (await request(t.app).get('/metrics').expect(200)).text;
    expect(sample(text, 'nmdc_bulk_work_waits', 'measure="times"')).toBe(before.times + 2);
    expect(sample(text, 'nmdc_bulk_work_waits', 'measure="seconds"')).toBeCloseTo(
      (before.ms + 250) / 1000,
      9,
    );
  });

  it('counts pending trigger firings', async () => {
    const metrics = createMetrics(t);
    await t.store.upsertMany('trigger_firings', [{ id: 'trigger-1|nmdc:obj-1', status: 'pending' }]);
    // Read at once: the app's dispatcher turns pending firings into jobs every few seconds.
    const text = await metrics.registry.getSingleMetricAsString('nmdc_queue_depth');
    expect(sample(text, 'nmdc_queue_depth', 'queue="trigger_firings_pending"')).toBe(1);
  });
});
