/**
 * Golden tests of the Elasticsearch adapter against the stand-in (test/support/elasticsearch-stand-in.ts):
 * the exact template, mappings, bulk bodies and queries it sends, and what the stand-in holds
 * afterwards. The port's behaviour suite runs on the stand-in, and on a real cluster when
 * ELASTICSEARCH_URL is set.
 */
import { Client } from '@elastic/elasticsearch';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ElasticsearchIndex } from '../../search/elasticsearch/elasticsearch-index.ts';
import { INDEX_MAPPINGS, INDEX_SETTINGS, queryOf } from '../../search/elasticsearch/mapping.ts';
import { fingerprintOf } from '../../search/indexed-values.ts';
import {
  MAX_REFUSALS,
  withRefusals,
  withoutRefusals,
  type MetaState,
  type Refusal,
} from '../../search/elasticsearch/meta.ts';
import { ElasticsearchStandIn } from '../support/elasticsearch-stand-in.ts';
import { describeSearchIndex } from './behaviour.ts';

const doc = {
  id: 'nmdc:bsm-11-000001',
  name: 'Soil core',
  env_broad_scale: { term: { name: 'terrestrial biome' } },
  alternative_identifiers: ['gold:Gb0115231', 'img:3300039974'],
  depth: { has_numeric_value: 0.2 },
};

/** The NDJSON lines of a recorded `_bulk` request. */
const bulkLines = (body: string) =>
  body
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l));

describe('Elasticsearch adapter requests', () => {
  let standIn: ElasticsearchStandIn;
  let es: ElasticsearchIndex;
  beforeEach(async () => {
    standIn = await ElasticsearchStandIn.start();
    es = new ElasticsearchIndex(new Client({ node: standIn.url }), 'nmdc');
  });
  afterEach(async () => {
    await es.close();
    await standIn.close();
  });
  const requests = (path: RegExp, method?: string) =>
    standIn.requests.filter((r) => path.test(r.path) && (!method || r.method === method));

  it('installs an index template for its prefix, with a priority that grows with the prefix', async () => {
    await es.installTemplate();
    expect(requests(/^\/_index_template\//).map((r) => [r.method, r.path, r.body])).toEqual([
      [
        'PUT',
        '/_index_template/nmdc-search-index',
        {
          index_patterns: ['nmdc-*'],
          priority: 104,
          template: { settings: INDEX_SETTINGS, mappings: INDEX_MAPPINGS },
        },
      ],
    ]);
    // Another deployment's longer prefix overlapping it does not tie.
    const other = new ElasticsearchIndex(new Client({ node: standIn.url }), 'nmdc-test-1');
    await other.installTemplate();
    expect(requests(/^\/_index_template\//).at(-1)!.body.priority).toBe(111);
    await other.close();
  });

  it('creates each collection index once, behind an alias, with explicit non-dynamic mappings', async () => {
    await es.index('biosample_set', [doc]);
    await es.index('biosample_set', [doc]);
    const creates = requests(/^\/nmdc-biosample_set--/, 'PUT');
    expect(creates).toHaveLength(1);
    expect(creates[0]!.body).toEqual({
      settings: INDEX_SETTINGS,
      mappings: INDEX_MAPPINGS,
      aliases: { 'nmdc-biosample_set': { is_write_index: true } },
    });
    expect(standIn.aliasTargets('nmdc-biosample_set')).toEqual([creates[0]!.path.slice(1)]);
    expect(INDEX_MAPPINGS).toEqual({
      dynamic: false,
      properties: {
        fingerprint: { type: 'keyword' },
        paths: { type: 'keyword' },
        values: { type: 'wildcard' },
        text: { type: 'text', analyzer: 'nmdc_words' },
      },
    });
    expect(INDEX_SETTINGS).toEqual({
      number_of_shards: 1,
      max_regex_length: 1000,
      analysis: {
        tokenizer: { nmdc_words: { type: 'pattern', pattern: '[^\\p{L}\\p{N}]+' } },
        filter: { nmdc_word_length: { type: 'truncate', length: 1000 } },
        analyzer: {
          nmdc_words: { type: 'custom', tokenizer: 'nmdc_words', filter: ['lowercase', 'nmdc_word_length'] },
        },
      },
    });
  });

  it('bulk-indexes every string with its path and a fingerprint, versioned, requiring the alias', async () => {
    await es.index('biosample_set', [doc], { version: 42 });
    const [bulk] = requests(/^\/_bulk$/);
    expect(bulkLines(bulk!.body)).toEqual([
      {
        index: {
          _index: 'nmdc-biosample_set',
          _id: 'nmdc:bsm-11-000001',
          version: 42,
          version_type: 'external',
          require_alias: true,
        },
      },
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
    ]);
  });

  it('deletes removed records in bulk, versioned', async () => {
    await es.remove('study_set', ['a', 'b'], { version: 7 });
    const [bulk] = requests(/^\/_bulk$/);
    expect(bulkLines(bulk!.body)).toEqual([
      { delete: { _index: 'nmdc-study_set', _id: 'a', version: 7, version_type: 'external' } },
      { delete: { _index: 'nmdc-study_set', _id: 'b', version: 7, version_type: 'external' } },
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

  it('answers a narrowed query with one search, no point in time, and gives up past the limit', async () => {
    await es.index(
      'biosample_set',
      Array.from({ length: 600 }, (_, i) => ({ id: `nmdc:bsm-11-${i}`, name: `soil sample ${i}` })),
    );
    await es.refresh();
    standIn.requests.length = 0;
    const predicate = { kind: 'regex', path: 'name', pattern: 'soil', flags: 'i' } as const;
    expect(await es.candidates('biosample_set', predicate, 500)).toEqual({ all: true });
    const found = await es.candidates('biosample_set', { ...predicate, pattern: 'sample 1\\d\\d$' }, 500);
    expect(found.all ? 0 : found.ids.size).toBe(100);
    expect(standIn.requests.map((r) => `${r.method} ${r.path}`)).toEqual([
      'POST /nmdc-biosample_set/_search',
      'POST /nmdc-biosample_set/_search',
    ]);
    expect(standIn.requests[0]!.body).toEqual({
      size: 501,
      _source: false,
      query: queryOf(predicate),
      sort: ['_doc'],
      track_total_hits: 501,
    });
  });

  it('pages ids through a point in time only for a set larger than one page', async () => {
    const docs = Array.from({ length: 10_001 }, (_, i) => ({ id: `id-${i}`, name: 'soil' }));
    await es.index('biosample_set', docs);
    await es.refresh();
    standIn.requests.length = 0;
    const result = await es.candidates(
      'biosample_set',
      { kind: 'search', path: 'name', text: 'soil' },
      50_000,
    );
    expect(result.all ? 0 : result.ids.size).toBe(10_001);
    expect(standIn.requests.map((r) => `${r.method} ${r.path}`)).toEqual([
      'POST /nmdc-biosample_set/_search',
      'POST /nmdc-biosample_set/_pit',
      'POST /_search',
      'POST /_search',
      'DELETE /_pit',
    ]);
    expect(standIn.requests[2]!.body).toMatchObject({
      size: 10_000,
      _source: false,
      sort: [{ _shard_doc: 'asc' }],
      track_total_hits: false,
    });
    expect(standIn.requests[2]!.body.search_after).toBeUndefined();
    expect(standIn.requests[3]!.body.search_after).toHaveLength(1);
  }, 20_000);

  it('reads fingerprints from doc values and keeps the watermark in a meta document, after a refresh', async () => {
    await es.index('study_set', [{ id: 'a', name: 'x' }]);
    const out: unknown[] = [];
    for await (const batch of es.fingerprints('study_set')) out.push(...batch);
    expect(out).toEqual([{ id: 'a', fingerprint: fingerprintOf({ id: 'a', name: 'x' }) }]);
    standIn.requests.length = 0;
    await es.setWatermark(12);
    expect(standIn.requests.map((r) => `${r.method} ${r.path}`)).toEqual([
      'GET /nmdc-*/_refresh',
      'GET /nmdc--meta/_doc/watermark',
      'PUT /nmdc--meta/_doc/watermark',
    ]);
    expect(standIn.requests[2]!.body).toEqual({
      seq: 12,
      collections: ['study_set'],
      refused: [],
      overflow: [],
    });
    expect(await es.watermark()).toBe(12);
    // Never backwards: a slower process's older mark does not win.
    await es.setWatermark(9);
    expect(await es.watermark()).toBe(12);
  });
});

describeSearchIndex('Elasticsearch stand-in', async () => {
  const standIn = await ElasticsearchStandIn.start();
  const es = new ElasticsearchIndex(new Client({ node: standIn.url }), 'nmdc');
  return {
    index: es,
    settle: () => es.refresh(),
    dispose: async () => {
      await es.close();
      await standIn.close();
    },
  };
});

// Against a real cluster (not available in CI): set ELASTICSEARCH_URL (and ELASTICSEARCH_API_KEY,
// ELASTICSEARCH_CA_CERT or ELASTICSEARCH_CA_FINGERPRINT for a secured one) to run the port's suite.
describe.skipIf(!process.env.ELASTICSEARCH_URL)('Elasticsearch cluster', () => {
  describeSearchIndex('Elasticsearch', async () => {
    const es = await ElasticsearchIndex.connect({
      url: process.env.ELASTICSEARCH_URL!,
      prefix: `nmdc-test-${process.pid}-${Date.now()}`,
      apiKey: process.env.ELASTICSEARCH_API_KEY,
      caCert: process.env.ELASTICSEARCH_CA_CERT,
      caFingerprint: process.env.ELASTICSEARCH_CA_FINGERPRINT?.replace(/:/g, ''),
    });
    return {
      index: es,
      settle: () => es.refresh(),
      dispose: async () => {
        await es.destroy();
        await es.close();
      },
    };
  });
});

describe('refusals kept in the meta document', () => {
  const refusal = (id: string, version: number, index = 'nmdc-biosample_set--a'): Refusal => ({
    collection: 'biosample_set',
    id,
    index,
    version,
    status: 400,
    type: 'document_parsing_exception',
    reason: 'r',
    at: '2025-01-01T00:00:00.000Z',
  });
  const empty: MetaState = { seq: 0, collections: [], refused: [], overflow: [] };

  it('keep one refusal per record and index (the newest version), and drop it once a newer version is written', () => {
    const state = withRefusals(empty, [
      refusal('a', 3),
      refusal('a', 5),
      refusal('a', 4),
      refusal('a', 2, 'other'),
    ]);
    expect(state.refused.map((r) => [r.id, r.index, r.version])).toEqual([
      ['a', 'nmdc-biosample_set--a', 5],
      ['a', 'other', 2],
    ]);
    const cleared = (version: number) =>
      withoutRefusals(state, [
        { collection: 'biosample_set', id: 'a', index: 'nmdc-biosample_set--a', version },
      ]);
    expect(cleared(5).refused).toHaveLength(2); // not newer than the refused write
    expect(cleared(6).refused.map((r) => r.index)).toEqual(['other']);
  });

  it(`past ${MAX_REFUSALS.toLocaleString('en-US')} refusals mark the collection overflowing: it cannot narrow until rebuilt`, async () => {
    const many = Array.from({ length: MAX_REFUSALS + 1 }, (_, i) => refusal(`r${i}`, 1));
    const state = withRefusals(empty, many);
    expect(state.refused).toHaveLength(MAX_REFUSALS);
    expect(state.overflow).toEqual(['biosample_set']);

    const standIn = await ElasticsearchStandIn.start();
    const es = new ElasticsearchIndex(new Client({ node: standIn.url }), 'nmdc');
    try {
      await new Client({ node: standIn.url }).index({
        index: 'nmdc--meta',
        id: 'watermark',
        document: { ...empty, seq: 40, refused: [refusal('x', 1)], overflow: ['biosample_set'] },
      });
      // Every change of an overflowing collection is fresh again; others keep their watermark.
      expect(await es.freshness('biosample_set')).toEqual({ since: 0, missing: [] });
      expect(await es.freshness('study_set')).toEqual({ since: 40, missing: [] });
      await es.clear('biosample_set');
      expect(await es.freshness('biosample_set')).toEqual({ since: 40, missing: [] });
    } finally {
      await es.close();
      await standIn.close();
    }
  });
});
