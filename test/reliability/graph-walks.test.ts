/**
 * Bounded work on a large study (1 study, 5,000 biosamples, 20,000 data objects): walks run in
 * batches that give other requests their turn, a large answer is streamed, a page of linked
 * instances comes with a token, and a walk past the cap ends in a 422 with a detail.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../support/server.ts';
import type { Doc } from '../../src/store/port.ts';
import { ProvenanceGraph } from '../../src/provenance/graph.ts';
import { Unprocessable, type DomainError } from '../../src/errors.ts';
import { statusOf } from '../../src/http/error-handler.ts';

const BIOSAMPLES = 5000;
const PER_BIOSAMPLE = 4;
const BOUND_MS = 5000;
const STUDY = 'nmdc:sty-11-big';

let t: TestServer;

beforeAll(async () => {
  t = await startTestServer();
  const pad = (n: number) => String(n).padStart(5, '0');
  const put = async (collection: string, docs: Doc[]) => {
    for (let i = 0; i < docs.length; i += 2000) await t.store.upsertMany(collection, docs.slice(i, i + 2000));
  };
  await put('study_set', [{ id: STUDY, type: 'nmdc:Study', name: 'A large study' }]);
  const b = (i: number) => `nmdc:bsm-11-b${pad(i)}`;
  const o = (i: number, k: number) => `nmdc:dobj-11-o${pad(i)}x${k}`;
  const ids = Array.from({ length: BIOSAMPLES }, (_, i) => i);
  await put(
    'biosample_set',
    ids.map((i) => ({ id: b(i), type: 'nmdc:Biosample', associated_studies: [STUDY] })),
  );
  await put(
    'data_generation_set',
    ids.map((i) => ({
      id: `nmdc:dgns-11-g${pad(i)}`,
      type: 'nmdc:NucleotideSequencing',
      has_input: [b(i)],
      has_output: Array.from({ length: PER_BIOSAMPLE }, (_, k) => o(i, k)),
    })),
  );
  await put(
    'data_object_set',
    ids.flatMap((i) =>
      Array.from({ length: PER_BIOSAMPLE }, (_, k) => ({
        id: o(i, k),
        type: 'nmdc:DataObject',
        name: `f${k}`,
      })),
    ),
  );
}, 180_000);
afterAll(async () => t?.close());

async function timed(path: string): Promise<{ status: number; body: any; ms: number }> {
  const t0 = performance.now();
  const res = await fetch(`${t.url}${path}`, { signal: AbortSignal.timeout(60_000) });
  const body = await res.json();
  return { status: res.status, body, ms: performance.now() - t0 };
}

describe('walks over a large study', () => {
  it('streams every data object of the study, grouped by biosample', async () => {
    const { status, body } = await timed(`/data_objects/study/${STUDY}`);
    expect(status).toBe(200);
    expect(body).toHaveLength(BIOSAMPLES);
    expect(body.reduce((n: number, g: any) => n + g.data_objects.length, 0)).toBe(BIOSAMPLES * PER_BIOSAMPLE);
    expect(body[0].biosample_id).toBe('nmdc:bsm-11-b00000');
    expect(body[0].data_objects.map((d: Doc) => d.id)).toEqual(
      [0, 1, 2, 3].map((k) => `nmdc:dobj-11-o00000x${k}`),
    );
  }, 60_000);

  it('answers the first page of linked instances with a token', async () => {
    const { status, body } = await timed(`/nmdcschema/linked_instances?ids=${STUDY}&types=nmdc:DataObject`);
    expect(status).toBe(200);
    expect(body.resources).toHaveLength(20);
    expect(body.resources[0]).toEqual({
      id: 'nmdc:dobj-11-o00000x0',
      type: 'nmdc:DataObject',
      _downstream_of: [STUDY],
    });
    expect(typeof body.next_page_token).toBe('string');
  }, 60_000);

  it('pages a large answer from its snapshot, across the chunks it is kept in', async () => {
    const all = await timed(
      `/nmdcschema/linked_instances?ids=${STUDY}&types=nmdc:DataObject&max_page_size=0`,
    );
    expect(all.body.resources).toHaveLength(BIOSAMPLES * PER_BIOSAMPLE);
    const seen: string[] = [];
    let page = await timed(
      `/nmdcschema/linked_instances?ids=${STUDY}&types=nmdc:DataObject&max_page_size=1500`,
    );
    for (let n = 0; ; n++) {
      expect(page.status).toBe(200);
      seen.push(...page.body.resources.map((r: Doc) => r.id));
      if (!page.body.next_page_token) break;
      // Page sizes may change from page to page (the Python client's later pages use the default).
      const size = n % 2 ? 1500 : 3700;
      page = await timed(
        `/nmdcschema/linked_instances?ids=${STUDY}&types=nmdc:DataObject&max_page_size=${size}&page_token=${page.body.next_page_token}`,
      );
    }
    expect(seen).toEqual(all.body.resources.map((r: Doc) => r.id));
  }, 60_000);

  it('keeps serving other requests while large walks run', async () => {
    const latencies: number[] = [];
    let walking = true;
    const started = performance.now();
    let walkMs = 0;
    const walks = (async () => {
      for (let round = 0; round < 2; round++)
        await Promise.all([
          timed(`/data_objects/study/${STUDY}`),
          timed(`/nmdcschema/linked_instances?ids=${STUDY}&max_page_size=5`),
        ]);
      walking = false;
      walkMs = performance.now() - started;
    })();
    while (walking) {
      const { status, ms } = await timed('/studies/' + encodeURIComponent(STUDY));
      expect(status).toBe(200);
      latencies.push(ms);
    }
    await walks;
    latencies.sort((a, b) => a - b);
    const p50 = latencies[Math.floor(latencies.length / 2)]!;
    const max = latencies[latencies.length - 1]!;
    expect(latencies.length).toBeGreaterThan(1);
    expect(max, `by-id during the walks: p50 ${p50} ms, max ${max} ms`).toBeLessThan(BOUND_MS);
    expect(p50, `by-id p50 ${p50} ms during ${walkMs} ms of walks`).toBeLessThan(walkMs / 4);
  }, 120_000);

  it('keeps serving after a client goes away in the middle of a streamed answer', async () => {
    const controller = new AbortController();
    const res = await fetch(`${t.url}/data_objects/study/${STUDY}`, { signal: controller.signal });
    const reader = res.body!.getReader();
    const { value } = await reader.read();
    expect(new TextDecoder().decode(value).startsWith('[{"biosample_id":')).toBe(true);
    controller.abort();
    await reader.closed.catch(() => undefined);
    const { status, ms } = await timed(`/studies/${encodeURIComponent(STUDY)}`);
    expect(status).toBe(200);
    expect(ms).toBeLessThan(BOUND_MS);
    const again = await timed(`/data_objects/study/${STUDY}`);
    expect(again.body).toHaveLength(BIOSAMPLES);
  }, 60_000);

  it('ends a walk past its cap with a 422 that says what to do', async () => {
    const graph = new ProvenanceGraph(t.edgeIndex, t.store, t.store.state, { maxPairs: 1000 });
    const err = await graph.linkedInstances({ ids: [STUDY], hydrate: false, max_page_size: 20 }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(Unprocessable);
    expect(statusOf(err as DomainError)).toBe(422);
    expect((err as DomainError).detail).toBe(
      'linked instances: the walk reaches more than 1,000 (record, start id) pairs, the most one request may walk. Ask for fewer ids at a time.',
    );
  });
});
