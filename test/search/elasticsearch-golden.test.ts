/**
 * Golden tests of the Elasticsearch adapter: a fake client records every request, and the tests
 * pin the exact mappings, bulk bodies and queries the adapter sends. The port's behaviour suite
 * runs against a real cluster when ELASTICSEARCH_URL is set.
 */
import { describe, expect, it } from 'vitest';
import {
  ElasticsearchIndex,
  INDEX_MAPPINGS,
  INDEX_SETTINGS,
  queryOf,
  type EsClient,
} from '../../search/elasticsearch/elasticsearch-index.ts';
import { fingerprintOf } from '../../search/indexed-values.ts';
import { describeSearchIndex } from './behaviour.ts';

type Call = { method: string; req: any };

/** Records requests; `search` answers from a queue of canned responses. */
function fakeClient(searchResponses: any[] = []): { client: EsClient; calls: Call[] } {
  const calls: Call[] = [];
  const existing = new Set<string>();
  const rec = (method: string, result: (req: any) => any) => async (req: any) => {
    calls.push({ method, req });
    return result(req);
  };
  const client: EsClient = {
    indices: {
      exists: rec('indices.exists', (r) => existing.has(r.index)),
      create: rec('indices.create', (r) => existing.add(r.index)),
      delete: rec('indices.delete', (r) => existing.delete(r.index)),
      refresh: rec('indices.refresh', () => ({})),
    },
    bulk: rec('bulk', () => ({ errors: false, items: [] })),
    search: rec('search', () => searchResponses.shift() ?? { hits: { total: { value: 0 }, hits: [] } }),
    openPointInTime: rec('openPointInTime', () => ({ id: 'pit-1' })),
    closePointInTime: rec('closePointInTime', () => ({})),
    get: rec('get', () => ({ _source: { seq: 7 } })),
    index: rec('index', () => ({})),
    close: async () => {},
  };
  return { client, calls };
}

const doc = {
  id: 'nmdc:bsm-11-000001',
  name: 'Soil core',
  env_broad_scale: { term: { name: 'terrestrial biome' } },
  alternative_identifiers: ['gold:Gb0115231', 'img:3300039974'],
  depth: { has_numeric_value: 0.2 },
};

describe('Elasticsearch adapter requests', () => {
  it('creates each collection index once with explicit, non-dynamic mappings', async () => {
    const { client, calls } = fakeClient();
    const es = new ElasticsearchIndex(client, 'nmdc');
    await es.index('biosample_set', [doc]);
    await es.index('biosample_set', [doc]);
    const creates = calls.filter((c) => c.method === 'indices.create');
    expect(creates).toEqual([
      {
        method: 'indices.create',
        req: { index: 'nmdc-biosample_set', settings: INDEX_SETTINGS, mappings: INDEX_MAPPINGS },
      },
    ]);
    expect(INDEX_MAPPINGS).toEqual({
      dynamic: false,
      properties: {
        fingerprint: { type: 'keyword' },
        paths: { type: 'keyword' },
        values: { type: 'wildcard' },
        text: { type: 'text', analyzer: 'nmdc_words' },
      },
    });
    expect(INDEX_SETTINGS.analysis).toEqual({
      tokenizer: { nmdc_words: { type: 'pattern', pattern: '[^\\p{L}\\p{N}]+' } },
      analyzer: { nmdc_words: { type: 'custom', tokenizer: 'nmdc_words', filter: ['lowercase'] } },
    });
  });

  it('bulk-indexes every string with its path, and a fingerprint', async () => {
    const { client, calls } = fakeClient();
    await new ElasticsearchIndex(client, 'nmdc').index('biosample_set', [doc]);
    const bulk = calls.find((c) => c.method === 'bulk')!;
    expect(bulk.req).toEqual({
      operations: [
        { index: { _index: 'nmdc-biosample_set', _id: 'nmdc:bsm-11-000001' } },
        {
          fingerprint: fingerprintOf(doc),
          paths: ['id', 'name', 'env_broad_scale.term.name', 'alternative_identifiers'],
          values: [
            'id\u001fnmdc:bsm-11-000001',
            'name\u001fSoil core',
            'env_broad_scale.term.name\u001fterrestrial biome',
            'alternative_identifiers\u001fgold:Gb0115231',
            'alternative_identifiers\u001fimg:3300039974',
          ],
          text: ['nmdc:bsm-11-000001', 'Soil core', 'terrestrial biome', 'gold:Gb0115231', 'img:3300039974'],
        },
      ],
    });
  });

  it('deletes removed records in bulk', async () => {
    const { client, calls } = fakeClient();
    await new ElasticsearchIndex(client, 'nmdc').remove('study_set', ['a', 'b']);
    expect(calls).toEqual([
      {
        method: 'bulk',
        req: {
          operations: [
            { delete: { _index: 'nmdc-study_set', _id: 'a' } },
            { delete: { _index: 'nmdc-study_set', _id: 'b' } },
          ],
        },
      },
    ]);
  });

  it('turns predicates into path-bound regexp queries on the wildcard field', () => {
    expect(queryOf({ kind: 'search', path: 'name', text: 'soil' })).toEqual({
      regexp: {
        values: {
          value: 'name(\\..*)?\u001f(.*[sS\u017f]oil.*)',
          flags: 'NONE',
          case_insensitive: true,
          max_determinized_states: 10_000,
        },
      },
    });
    expect(
      queryOf({ kind: 'regex', path: 'env_broad_scale.term.name', pattern: '^terr', flags: '' }),
    ).toEqual({
      regexp: {
        values: {
          value: 'env_broad_scale\\.term\\.name(\\..*)?\u001f(terr.*)',
          flags: 'NONE',
          case_insensitive: false,
          max_determinized_states: 10_000,
        },
      },
    });
    // A numeric segment may be an array position: the path is cut before it.
    expect(
      (queryOf({ kind: 'regex', path: 'alternative_identifiers.0', pattern: 'gold:', flags: '' }) as any)
        .regexp.values.value,
    ).toBe('alternative_identifiers(\\..*)?\u001f(.*gold\\:.*)');
  });

  it('turns word predicates into an AND match on the analysed text, filtered by path', () => {
    expect(queryOf({ kind: 'words', path: 'name', text: 'Soil, core!' })).toEqual({
      bool: {
        filter: [
          { match: { text: { query: 'soil core', operator: 'and' } } },
          { prefix: { paths: { value: 'name' } } },
        ],
      },
    });
  });

  it('does not query for patterns that match anything', () => {
    expect(queryOf({ kind: 'regex', path: 'name', pattern: '.*', flags: '' })).toBeNull();
    expect(queryOf({ kind: 'regex', path: 'name', pattern: '(?i)x', flags: '' })).toBeNull();
  });

  it('counts up to the limit first and gives up without paging when there are more', async () => {
    const { client, calls } = fakeClient([{ hits: { total: { value: 501, relation: 'gte' }, hits: [] } }]);
    const result = await new ElasticsearchIndex(client, 'nmdc').candidates(
      'biosample_set',
      { kind: 'regex', path: 'name', pattern: 'soil', flags: 'i' },
      500,
    );
    expect(result).toEqual({ all: true });
    expect(calls).toEqual([
      {
        method: 'search',
        req: {
          index: 'nmdc-biosample_set',
          size: 0,
          query: queryOf({ kind: 'regex', path: 'name', pattern: 'soil', flags: 'i' }),
          track_total_hits: 501,
          ignore_unavailable: true,
        },
      },
    ]);
  });

  it('pages ids-only through a point in time with search_after', async () => {
    const page1 = Array.from({ length: 10_000 }, (_, i) => ({ _id: `id-${i}`, sort: [i] }));
    const page2 = [{ _id: 'id-last', sort: [10_000] }];
    const { client, calls } = fakeClient([
      { hits: { total: { value: 10_001 }, hits: [] } },
      { hits: { hits: page1 } },
      { hits: { hits: page2 } },
    ]);
    const result = await new ElasticsearchIndex(client, 'nmdc').candidates(
      'biosample_set',
      { kind: 'search', path: 'name', text: 'soil' },
      50_000,
    );
    expect(result.all ? 0 : result.ids.size).toBe(10_001);
    const query = queryOf({ kind: 'search', path: 'name', text: 'soil' });
    expect(calls.map((c) => c.method)).toEqual([
      'search',
      'openPointInTime',
      'search',
      'search',
      'closePointInTime',
    ]);
    expect(calls[1]!.req).toEqual({
      index: 'nmdc-biosample_set',
      keep_alive: '1m',
      ignore_unavailable: true,
    });
    const pageRequest = {
      size: 10_000,
      _source: false,
      query,
      pit: { id: 'pit-1', keep_alive: '1m' },
      sort: [{ _shard_doc: 'asc' }],
      track_total_hits: false,
    };
    expect(calls[2]!.req).toEqual(pageRequest);
    expect(calls[3]!.req).toEqual({ ...pageRequest, search_after: [9_999] });
    expect(calls[4]!.req).toEqual({ id: 'pit-1' });
  });

  it('reads fingerprints from doc values and keeps the watermark in a meta index after a refresh', async () => {
    const { client, calls } = fakeClient([
      { hits: { hits: [{ _id: 'a', sort: [0], fields: { fingerprint: ['fp-a'] } }] } },
    ]);
    const es = new ElasticsearchIndex(client, 'nmdc');
    await es.index('study_set', []);
    const out: unknown[] = [];
    for await (const batch of es.fingerprints('study_set')) out.push(...batch);
    expect(out).toEqual([{ id: 'a', fingerprint: 'fp-a' }]);
    expect(calls.find((c) => c.method === 'search')!.req).toMatchObject({
      docvalue_fields: ['fingerprint'],
      _source: false,
      query: { match_all: {} },
    });
    calls.length = 0;
    await es.setWatermark(12);
    expect(calls.map((c) => c.method)).toEqual([
      'indices.refresh',
      'indices.exists',
      'indices.create',
      'index',
    ]);
    expect(calls[0]!.req).toEqual({ index: 'nmdc-*', ignore_unavailable: true });
    expect(calls[3]!.req).toEqual({
      index: 'nmdc--meta',
      id: 'watermark',
      document: { seq: 12 },
      refresh: 'wait_for',
    });
    expect(await es.watermark()).toBe(7);
  });
});

// Against a real cluster (not available in CI): set ELASTICSEARCH_URL to run the port's behaviour suite.
describe.skipIf(!process.env.ELASTICSEARCH_URL)('Elasticsearch cluster', () => {
  describeSearchIndex('Elasticsearch', async () => {
    const prefix = `nmdc-test-${process.pid}-${Date.now()}`;
    const es = await ElasticsearchIndex.connect(process.env.ELASTICSEARCH_URL!, prefix);
    return {
      index: es,
      settle: () => es.setWatermark(0),
      dispose: () => es.close(),
    };
  });
});
