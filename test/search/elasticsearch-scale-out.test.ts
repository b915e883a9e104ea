/**
 * The search path scaled out, on the strict Elasticsearch stand-in with the embedded store as
 * source of truth: what a real cluster does to a large load, a record it refuses, a transient
 * overload, two catch-up processes, a reindex under live searches, a lost index, a query it
 * refuses, and a secured (API key, self-signed TLS) cluster. Each test fails on the adapter as it
 * was before these were handled (one `_bulk`, unversioned writes, delete-then-create reindex,
 * auto-created indices, errors passed through, no credentials).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { X509Certificate } from 'node:crypto';
import { spawn } from 'node:child_process';
import { Writable } from 'node:stream';
import { Client } from '@elastic/elasticsearch';
import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { SqliteDocumentStore } from '../../src/store/sqlite/index.ts';
import { QueryPlanner } from '../../src/query/planner/planner.ts';
import type { Doc } from '../../src/store/port.ts';
import {
  ElasticsearchIndex,
  type ElasticsearchIndexOptions,
} from '../../search/elasticsearch/elasticsearch-index.ts';
import { catchUp, checkCollection, hasDrift, reindexCollection } from '../../search/maintenance.ts';
import { SearchIndexUnavailable } from '../../search/errors.ts';
import { RecordWriter } from '../../search/writer.ts';
import { compileFilter } from '../../src/store/filter.ts';
import { loadConfig } from '../../src/config.ts';
import { openSearchIndex } from '../../search/index.ts';
import { ElasticsearchStandIn, type StandInOptions } from '../support/elasticsearch-stand-in.ts';
import { asDeployed } from '../support/deployed-store.ts';

const C = 'biosample_set';
const TLS = path.join(import.meta.dirname, '../fixtures/tls');

const sample = (i: number, extra: Record<string, unknown> = {}): Doc => ({
  id: `nmdc:bsm-11-${String(i).padStart(6, '0')}`,
  name: `sample ${i} tag${i % 50} ${i % 4 === 0 ? 'alpha' : 'beta'}`,
  description: 'x'.repeat(800),
  ...extra,
});

interface World {
  standIn: ElasticsearchStandIn;
  store: SqliteDocumentStore;
  es: ElasticsearchIndex;
  planner: QueryPlanner;
  logs: Array<Record<string, unknown>>;
  /** Another process's adapter on the same cluster. */
  other(options?: ElasticsearchIndexOptions): ElasticsearchIndex;
}

let world: World;
let dir: string;
const opened: ElasticsearchIndex[] = [];

async function setUp(
  standInOptions: StandInOptions = {},
  options: ElasticsearchIndexOptions = {},
): Promise<World> {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'es-scale-out-'));
  const standIn = await ElasticsearchStandIn.start(standInOptions);
  const store = new SqliteDocumentStore({ file: path.join(dir, 'nmdc.sqlite') });
  const logs: Array<Record<string, unknown>> = [];
  const logger = pino(
    { level: 'warn' },
    new Writable({
      write(chunk, _enc, done) {
        logs.push(JSON.parse(String(chunk)));
        done();
      },
    }),
  );
  const other = (more: ElasticsearchIndexOptions = {}) => {
    const es = new ElasticsearchIndex(new Client({ node: standIn.url }), 'nmdc', {
      logger,
      bulkBackoffMs: 1,
      ...options,
      ...more,
    });
    opened.push(es);
    return es;
  };
  const es = other();
  // (A secured stand-in is reached through the settings under test instead.)
  if (!standInOptions.tls && !standInOptions.apiKey) await es.installTemplate();
  return { standIn, store, es, planner: new QueryPlanner(asDeployed(store), es), logs, other };
}

afterEach(async () => {
  for (const es of opened.splice(0)) await es.close();
  await world?.store.close();
  await world?.standIn.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

const ids = (docs: Doc[]) => docs.map((d) => d.id).sort();
/** What the source of truth holds that matches, by brute force. */
async function truth(store: SqliteDocumentStore, filter: Record<string, unknown>): Promise<string[]> {
  const test = compileFilter(filter);
  const out: string[] = [];
  for await (const batch of store.scan(C, 1000)) for (const d of batch) if (test(d)) out.push(d.id);
  return out.sort();
}

describe('bulk requests against http.max_content_length', () => {
  beforeEach(async () => {
    world = await setUp({ maxContentLength: 512 * 1024 }, { bulkBytes: 128 * 1024 });
  });

  it('indexes a load many times the request limit in chunks within it', async () => {
    const { store, es, standIn } = world;
    await store.upsertMany(
      C,
      Array.from({ length: 2000 }, (_, i) => sample(i)),
    );
    await catchUp(store, es);
    expect(await es.watermark()).toBe(await store.latestSeq());
    expect(hasDrift(await checkCollection(store, es, C))).toBe(false);
    const bulks = standIn.requests.filter((r) => r.path === '/_bulk');
    expect(bulks.length).toBeGreaterThanOrEqual(15);
    expect(Math.max(...bulks.map((r) => r.bytes))).toBeLessThanOrEqual(128 * 1024);
  });

  it('halves a request the cluster still finds too large (configured below our chunk size)', async () => {
    const { store, standIn, other } = world;
    const es = other({ bulkBytes: 2 * 1024 * 1024 });
    await store.upsertMany(
      C,
      Array.from({ length: 1500 }, (_, i) => sample(i)),
    );
    await catchUp(store, es);
    expect(hasDrift(await checkCollection(store, es, C))).toBe(false);
    const bulks = standIn.requests.filter((r) => r.path === '/_bulk');
    expect(bulks.some((r) => r.bytes > 512 * 1024)).toBe(true); // met a 413
    expect(await es.watermark()).toBe(await store.latestSeq());
  });
});

describe('per-item bulk failures', () => {
  beforeEach(async () => {
    world = await setUp({}, { bulkAttempts: 3 });
  });

  it('reports a record Elasticsearch refuses for good, keeps it findable and moves the watermark on', async () => {
    const { store, es, standIn, planner, logs } = world;
    const refused = sample(1, { name: 'the refused sample of Harvard Forest' });
    // A key longer than Lucene's term limit: Elasticsearch refuses the record (immense term in `paths`).
    const immense = sample(2, { ['k'.repeat(33_000)]: 'unindexable value of Harvard Forest' });
    standIn.failItems(
      (action, _index, id) => action === 'index' && id === refused.id,
      {
        status: 400,
        type: 'document_parsing_exception',
        reason: '[1:2] failed to parse field [text]',
      },
      1,
    );
    await store.upsertMany(C, [sample(0), refused, immense, sample(3)]);
    await catchUp(store, es);
    expect(await es.watermark()).toBe(await store.latestSeq());
    const refusals = await es.refusals();
    expect(refusals.map((r) => [r.id, r.status, r.type]).sort()).toEqual([
      [refused.id, 400, 'document_parsing_exception'],
      [immense.id, 400, 'illegal_argument_exception'],
    ]);
    expect(refusals.find((r) => r.id === immense.id)!.reason).toMatch(/immense term in field="paths"/);
    expect(
      logs
        .filter((l) => l.msg?.toString().startsWith('Elasticsearch refused a record'))
        .map((l) => l.id)
        .sort(),
    ).toEqual([refused.id, immense.id].sort());
    // check-index sees them missing; searches still find them (they stay candidates).
    const report = await checkCollection(store, es, C);
    expect(report.missing.sort()).toEqual([refused.id, immense.id].sort());
    const filter = { name: { $regex: 'Harvard Forest' } };
    expect(ids(await planner.find(C, filter))).toEqual([refused.id]);
    const plan = await planner.plan(C, filter);
    expect(plan.candidates && [...plan.candidates].sort()).toEqual([refused.id, immense.id].sort());
    // Written again (the cause fixed), the record is indexed and its refusal goes.
    await store.upsertMany(C, [{ ...refused, name: 'the fixed sample of Harvard Forest' }]);
    await catchUp(store, es);
    expect((await es.refusals()).map((r) => r.id)).toEqual([immense.id]);
    expect(hasDrift(await checkCollection(store, es, C))).toBe(true);
    expect((await checkCollection(store, es, C)).missing).toEqual([immense.id]);
  });

  it('retries transient failures with backoff; past the bound the catch-up fails and the watermark stays', async () => {
    const { store, es, standIn } = world;
    await store.upsertMany(C, [sample(0), sample(1)]);
    standIn.failItems(
      (_a, _i, id) => id === sample(1).id,
      {
        status: 429,
        type: 'es_rejected_execution_exception',
        reason: 'rejected execution of coordinating operation',
      },
      2,
    );
    await catchUp(store, es);
    expect(hasDrift(await checkCollection(store, es, C))).toBe(false);
    expect(standIn.requests.filter((r) => r.path === '/_bulk')).toHaveLength(3);

    const mark = await es.watermark();
    await store.upsertMany(C, [sample(2)]);
    standIn.failItems(
      (_a, _i, id) => id === sample(2).id,
      {
        status: 503,
        type: 'unavailable_shards_exception',
        reason: 'primary shard is not active',
      },
      3,
    );
    await expect(catchUp(store, es)).rejects.toThrow(SearchIndexUnavailable);
    expect(await es.watermark()).toBe(mark);
    expect(await es.refusals()).toEqual([]);
    // The overload passed: the next catch-up indexes it.
    await catchUp(store, es);
    expect(hasDrift(await checkCollection(store, es, C))).toBe(false);
  });

  it('cuts words longer than 1,000 characters, so a long sequence does not break the term limit', async () => {
    const { store, es, planner } = world;
    const long = sample(1, { description: `ACGT${'ACGT'.repeat(10_000)} genome` });
    await store.upsertMany(C, [sample(0), long]);
    await catchUp(store, es);
    expect(await es.refusals()).toEqual([]);
    expect(hasDrift(await checkCollection(store, es, C))).toBe(false);
    expect(ids(await planner.find(C, { description: { $regex: 'genome$' } }))).toEqual([long.id]);
  });
});

describe('several catch-up processes', () => {
  beforeEach(async () => {
    world = await setUp();
  });

  it('a slower process never puts an older state of a record back (external versions)', async () => {
    const { store, es, other, standIn } = world;
    const x = sample(1, { name: 'first state' });
    await store.upsertMany(C, [sample(0), x]);
    await catchUp(store, es);

    // Process A reads the change and the record, then stalls before writing it.
    await store.upsertMany(C, [{ ...x, name: 'second state' }]);
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let fetched!: () => void;
    const hasFetched = new Promise<void>((r) => (fetched = r));
    const slowStore = Object.assign(Object.create(store) as SqliteDocumentStore, {
      getById: async (collection: string, id: string) => {
        const doc = await store.getById(collection, id);
        fetched();
        await gate;
        return doc;
      },
    });
    const a = other();
    const slow = catchUp(slowStore, a);
    await hasFetched;
    // Meanwhile the record changes again and process B catches up with it.
    await store.upsertMany(C, [{ ...x, name: 'third state of Harvard Forest' }]);
    await catchUp(store, es);
    const newest = await store.latestSeq();
    release();
    await slow;

    expect(standIn.document('nmdc-biosample_set', x.id)).toMatchObject({ version: newest });
    expect(await es.watermark()).toBe(newest);
    expect(hasDrift(await checkCollection(store, es, C))).toBe(false);
    expect(ids(await world.planner.find(C, { name: { $regex: 'third state' } }))).toEqual([x.id]);
  });
});

describe('reindex on a live system', () => {
  beforeEach(async () => {
    world = await setUp();
  });

  it('searches running throughout a rebuild and its swap never miss a record', async () => {
    const { store, es, other, planner, standIn } = world;
    const base = Array.from({ length: 1000 }, (_, i) => sample(i, { description: undefined }));
    await store.upsertMany(C, base);
    await catchUp(store, es);
    const stable = (tag: number) =>
      base.filter((d) => String(d.name).includes(`tag${tag} `)).map((d) => d.id);
    const misses: string[] = [];
    const rounds = { during: 0, narrowed: 0, total: 0 };
    let tag = 0;
    /** A few searches, each checked against the records that exist throughout. */
    const searchRound = async (at: string) => {
      for (let k = 0; k < 3; k++) {
        const t = (tag = (tag + 1) % 50);
        const filter = { name: { $regex: `tag${t} ` } };
        if ((await planner.plan(C, filter)).candidates) rounds.narrowed++;
        const found = new Set((await planner.find(C, filter)).map((d) => d.id));
        for (const id of stable(t)) if (!found.has(id)) misses.push(`${id} (${at})`);
        rounds.total++;
      }
    };

    // The reindex command is another process with its own client. Searches run after each batch
    // it writes, and around the swap, besides a loop of their own.
    const reindexer = other();
    const write = reindexer.index.bind(reindexer);
    reindexer.index = async (c, docs, w) => {
      await write(c, docs, w);
      rounds.during++;
      await searchRound('during the rebuild');
    };
    if (reindexer.endRebuild) {
      const end = reindexer.endRebuild.bind(reindexer);
      reindexer.endRebuild = async (c, completed) => {
        await searchRound('before the swap');
        await end(c, completed);
        await searchRound('after the swap');
      };
    }
    let done = false;
    const searching = (async () => {
      while (!done) await searchRound('concurrently');
    })();
    // Writes keep coming while it runs, caught up by the service as they land.
    const writing = (async () => {
      for (let i = 0; !done; i++) {
        await store.upsertMany(C, [sample(10_000 + i, { name: `fresh ${i} tag${i % 50} ` })]);
        if (i % 3 === 0) await store.deleteMany(C, { id: sample(10_000 + i - 1).id });
        await catchUp(store, es);
      }
    })();
    await reindexCollection(store, reindexer, C, () => {}, 100);
    done = true;
    await Promise.all([searching, writing]);

    expect(misses).toEqual([]);
    // One round after each batch of 100 the rebuild wrote (more records come during it).
    expect(rounds.during).toBeGreaterThanOrEqual(10);
    expect(rounds.narrowed).toBeGreaterThan(rounds.total / 2);
    await catchUp(store, es);
    expect(hasDrift(await checkCollection(store, es, C))).toBe(false);
    // One concrete index is left behind the alias, the old one dropped.
    expect(standIn.aliasTargets('nmdc-biosample_set')).toHaveLength(1);
    expect(standIn.indexNames().filter((n) => n.startsWith('nmdc-biosample_set'))).toEqual(
      standIn.aliasTargets('nmdc-biosample_set'),
    );
    const filter = { name: { $regex: 'tag7 ' } };
    expect(ids(await planner.find(C, filter))).toEqual(await truth(store, filter));
  }, 60_000);

  it('a search whose point in time or index went away under it asks again', async () => {
    const { store, es, standIn, planner } = world;
    await store.upsertMany(C, [sample(0), sample(1, { name: 'needle' })]);
    await catchUp(store, es);
    standIn.failRequests((m, p) => m === 'POST' && p.endsWith('/_search'), {
      status: 404,
      type: 'search_context_missing_exception',
      reason: 'No search context found for id [x]',
    });
    expect(ids(await planner.find(C, { name: { $regex: 'needle' } }))).toEqual([sample(1).id]);
    expect((await planner.plan(C, { name: { $regex: 'needle' } })).candidates).toEqual(
      new Set([sample(1).id]),
    );
  });
});

describe('our indexes are never created by a write', () => {
  beforeEach(async () => {
    world = await setUp();
  });

  it('after an index is lost, writes do not auto-create it with dynamic mappings; searches scan until reindex', async () => {
    const { store, es, standIn, planner, other } = world;
    await store.upsertMany(C, [sample(0, { name: 'old needle' })]);
    await catchUp(store, es);
    // An operator deletes the concrete index (its alias goes with it).
    const [concrete = 'nmdc-biosample_set'] = standIn.aliasTargets('nmdc-biosample_set');
    await new Client({ node: standIn.url }).indices.delete({ index: concrete });
    await store.upsertMany(C, [sample(1, { name: 'new needle' })]);
    const failed = await catchUp(store, es).then(
      () => undefined,
      (err: Error) => err,
    );
    // Searches stay exact (they scan: there is no index to narrow with)...
    const filter = { name: { $regex: 'needle' } };
    expect(ids(await planner.find(C, filter))).toEqual([sample(0).id, sample(1).id]);
    // ...because the catch-up refused to make the index again, empty or with dynamic mappings.
    expect(failed?.message).toMatch(/gone: run `npm run reindex`/);
    expect(standIn.indexNames().filter((n) => n.startsWith('nmdc-biosample_set'))).toEqual([]);

    await reindexCollection(store, other(), C);
    await catchUp(store, es);
    expect(hasDrift(await checkCollection(store, es, C))).toBe(false);
    expect(ids(await planner.find(C, filter))).toEqual([sample(0).id, sample(1).id]);
    // (The planner remembers for a while that this filter could not narrow; another one can.)
    expect((await planner.plan(C, { name: { $regex: 'new needle' } })).candidates).toEqual(
      new Set([sample(1).id]),
    );
  });

  it('an index anything else creates under the prefix gets the template: explicit mappings, not dynamic', async () => {
    const { standIn } = world;
    await new Client({ node: standIn.url }).index({
      index: 'nmdc-stray',
      document: { values: 'x' },
      id: '1',
    });
    expect(standIn.mappingOf('nmdc-stray').dynamic).toBe(false);
    expect(standIn.mappingOf('nmdc-stray').properties.values).toEqual({ type: 'wildcard' });
  });
});

describe('queries Elasticsearch refuses', () => {
  beforeEach(async () => {
    world = await setUp();
  });

  it('a 400 from Elasticsearch cannot narrow: the store answers exactly, nothing of the error reaches the caller', async () => {
    const { store, es, standIn, planner, logs } = world;
    await store.upsertMany(C, [sample(0), sample(1, { name: 'needle' })]);
    await catchUp(store, es);
    standIn.failRequests((m, p) => m === 'POST' && p.endsWith('/_search'), {
      status: 400,
      type: 'search_phase_execution_exception',
      reason: 'failed to create query: invalid character class \\n',
    });
    expect(ids(await planner.find(C, { name: { $regex: 'needle' } }))).toEqual([sample(1).id]);
    expect(es.refusedQueries).toBe(1);
    expect(logs.some((l) => l.msg === 'Elasticsearch refused a search query; the store scans instead')).toBe(
      true,
    );
  });

  it('an unavailable cluster is SearchIndexUnavailable (a 503), not its error', async () => {
    const { store, es, standIn, planner } = world;
    await store.upsertMany(C, [sample(0), sample(1, { name: 'needle' })]);
    await catchUp(store, es);
    standIn.failRequests(
      (m, p) => m === 'POST' && p.endsWith('/_search'),
      {
        status: 503,
        type: 'cluster_block_exception',
        reason: 'blocked by: [SERVICE_UNAVAILABLE/1/state not recovered]',
      },
      10,
    );
    await expect(planner.find(C, { name: { $regex: 'needle' } })).rejects.toThrow(SearchIndexUnavailable);
  });

  it('credentials refused on any request (the state document, a write) are SearchIndexUnavailable too', async () => {
    const { store, es, standIn, planner } = world;
    await store.upsertMany(C, [sample(0), sample(1, { name: 'needle' })]);
    await catchUp(store, es);
    const forbidden = {
      status: 403,
      type: 'security_exception',
      reason: 'action [indices:data/read/get] is unauthorized for API key id [k] of user [u]',
    };
    standIn.failRequests((m, p) => m === 'GET' && p === '/nmdc--meta/_doc/watermark', forbidden, 1);
    const search = planner.find(C, { name: { $regex: 'needle' } });
    await expect(search).rejects.toThrow(SearchIndexUnavailable);
    await expect(search).rejects.toThrow(/403 security_exception/);
    await store.upsertMany(C, [sample(2)]);
    standIn.failRequests((m, p) => m === 'POST' && p === '/_bulk', forbidden, 1);
    await expect(new RecordWriter(store, es).upsert(C, [sample(3)])).rejects.toThrow(SearchIndexUnavailable);
  });
});

describe('Elasticsearch 8 security', () => {
  const ca = path.join(TLS, 'ca.crt');
  const tls = {
    key: fs.readFileSync(path.join(TLS, 'server.key'), 'utf8'),
    cert: fs.readFileSync(path.join(TLS, 'server.crt'), 'utf8') + fs.readFileSync(ca, 'utf8'),
  };
  const fingerprint = new X509Certificate(fs.readFileSync(ca)).fingerprint256;

  it('connects with an API key over TLS trusting a CA file, from the settings', async () => {
    world = await setUp({ apiKey: 'bm1kYzpzZWNyZXQ=', tls });
    const config = loadConfig({
      DATA_DIR: dir,
      ELASTICSEARCH_URL: world.standIn.url,
      ELASTICSEARCH_API_KEY: 'bm1kYzpzZWNyZXQ=',
      ELASTICSEARCH_CA_CERT: ca,
    });
    const logger = pino({ level: 'silent' });
    const index = await openSearchIndex(config, world.store, logger, { catchUpEveryMs: 0 });
    try {
      await world.store.upsertMany(C, [sample(1, { name: 'needle' })]);
      await catchUp(world.store, index);
      expect(ids(await new QueryPlanner(world.store, index).find(C, { name: { $regex: 'needle' } }))).toEqual(
        [sample(1).id],
      );
    } finally {
      await index.close();
    }
  });

  it('trusts a CA fingerprint instead of a file, and refuses a wrong one', async () => {
    world = await setUp({ apiKey: 'bm1kYzpzZWNyZXQ=', tls });
    const connect = (caFingerprint: string) =>
      ElasticsearchIndex.connect({
        url: world.standIn.url,
        prefix: 'nmdc',
        apiKey: 'bm1kYzpzZWNyZXQ=',
        caFingerprint,
      });
    const ok = await connect(fingerprint.replace(/:/g, ''));
    expect(await ok.watermark()).toBe(0);
    await ok.close();
    await expect(connect('00'.repeat(32))).rejects.toThrow(/cannot reach Elasticsearch/);
  });

  it('says which setting is missing: the API key, or the CA', async () => {
    world = await setUp({ apiKey: 'bm1kYzpzZWNyZXQ=', tls });
    await expect(
      ElasticsearchIndex.connect({ url: world.standIn.url, prefix: 'nmdc', caCert: ca }),
    ).rejects.toThrow(/401 security_exception.*check ELASTICSEARCH_API_KEY/);
    await expect(
      ElasticsearchIndex.connect({ url: world.standIn.url, prefix: 'nmdc', apiKey: 'bm1kYzpzZWNyZXQ=' }),
    ).rejects.toThrow(/ELASTICSEARCH_CA_CERT or ELASTICSEARCH_CA_FINGERPRINT/);
  });
});

describe('reindex and check-index commands on Elasticsearch', () => {
  beforeEach(async () => {
    world = await setUp();
  });

  /** Runs a command as its own process (asynchronously: the stand-in answers from this one). */
  function run(script: string): Promise<{ status: number | null; stdout: string; stderr: string }> {
    const env = { ...process.env, DATA_DIR: dir, ELASTICSEARCH_URL: world.standIn.url, LOG_LEVEL: 'silent' };
    const child = spawn(process.execPath, ['--import', 'tsx', script], { env });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    return new Promise((resolve) => child.on('close', (status) => resolve({ status, stdout, stderr })));
  }

  it('rebuild behind the alias, and list the records Elasticsearch refused with the reason', async () => {
    const { store, standIn } = world;
    const immense = sample(20, { ['k'.repeat(33_000)]: 'unindexable' });
    await store.upsertMany(C, [...Array.from({ length: 20 }, (_, i) => sample(i)), immense]);
    const rebuilt = await run('src/cli/reindex.ts');
    expect(rebuilt.stderr).toBe('');
    expect(rebuilt.status).toBe(0);
    expect(rebuilt.stdout).toMatch(
      /reindexed 21 records in 1 collections in [\d.]+ s \([\d,]+\/s\) on elasticsearch/,
    );
    expect(standIn.aliasTargets('nmdc-biosample_set')).toHaveLength(1);

    const checked = await run('src/cli/check-index.ts');
    expect(checked.status).toBe(1);
    expect(checked.stdout).toContain(
      'biosample_set: DRIFT — 21 records checked, 1 missing, 0 stale, 0 extra',
    );
    expect(checked.stdout).toContain(
      `  refused by elasticsearch: ${immense.id} (400 illegal_argument_exception: Document contains at least one immense term in field="paths"`,
    );
  }, 60_000);
});
