/**
 * The PostgreSQL side of the search bench: the generator's biosamples COPYed into
 * `biosample_set(id text primary key, body jsonb)`, a pg_trgm GIN index per queried path built
 * afterwards, ANALYZE, and the shapes' queries as prepared statements.
 */
import type pg from 'pg';
import { generateRecords, type GenerateOptions } from '../../src/data/generator.ts';
import { copyField, copyFrom, timePrepared } from '../support/postgres.ts';
import { percentile } from '../support/embedded.ts';
import {
  COLLECTION,
  countPageSql,
  countSql,
  jsonExpression,
  pageSql,
  searchPattern,
  type CountShape,
  type PageShape,
} from './shapes.ts';

export interface PeerLoad {
  records: number;
  copySeconds: number;
  indexSeconds: number;
  analyzeSeconds: number;
  /** Trigram indexes and the primary key. */
  indexBytes: number;
  /** Heap, TOAST and maps. */
  tableBytes: number;
}

/** Replaces the table with the generator's biosamples for `options` and indexes `paths`. */
export async function loadPeer(
  client: pg.Client,
  options: GenerateOptions,
  paths: string[],
): Promise<PeerLoad> {
  await client.query(`DROP TABLE IF EXISTS ${COLLECTION}`);
  await client.query(`CREATE TABLE ${COLLECTION} (id text PRIMARY KEY, body jsonb NOT NULL)`);
  const lines = function* () {
    for (const { collection, doc } of generateRecords(options)) {
      if (collection !== COLLECTION) continue;
      yield `${copyField(String(doc.id))}\t${copyField(JSON.stringify(doc))}\n`;
    }
  };
  let t0 = performance.now();
  const records = await copyFrom(client, `COPY ${COLLECTION} (id, body) FROM STDIN`, lines());
  const copySeconds = (performance.now() - t0) / 1000;
  t0 = performance.now();
  for (const p of paths)
    await client.query(`CREATE INDEX ON ${COLLECTION} USING gin ((${jsonExpression(p)}) gin_trgm_ops)`);
  const indexSeconds = (performance.now() - t0) / 1000;
  t0 = performance.now();
  await client.query(`ANALYZE ${COLLECTION}`);
  const analyzeSeconds = (performance.now() - t0) / 1000;
  const sizes = await client.query<{ index_bytes: string; table_bytes: string }>(
    `SELECT (SELECT sum(pg_relation_size(indexrelid)) FROM pg_index WHERE indrelid = $1::regclass) AS index_bytes,
            pg_table_size($1::regclass) AS table_bytes`,
    [COLLECTION],
  );
  return {
    records,
    copySeconds,
    indexSeconds,
    analyzeSeconds,
    indexBytes: Number(sizes.rows[0]!.index_bytes),
    tableBytes: Number(sizes.rows[0]!.table_bytes),
  };
}

export interface PeerTimings {
  /** Runs after the first. */
  runs: number;
  p50: number;
  p99: number;
  /** The first execution (plan and cold pages). */
  first: number;
}

function summary(times: number[]): PeerTimings {
  return {
    runs: times.length - 1,
    first: times[0]!,
    p50: percentile(times.slice(1), 50),
    p99: percentile(times.slice(1), 99),
  };
}

export async function peerPageIds(client: pg.Client, shape: PageShape): Promise<string[]> {
  const result = await client.query<{ id: string }>(pageSql(shape, 'id'), [shape.pattern]);
  return result.rows.map((r) => r.id);
}

/** How many records the shape matches (its selectivity, for the report). */
export async function peerMatches(client: pg.Client, shape: PageShape): Promise<number> {
  const where = pageSql(shape, 'id').replace(/^SELECT id FROM (\S+) WHERE (.*) ORDER BY id LIMIT 25$/, '$2');
  const result = await client.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM ${COLLECTION} WHERE ${where}`,
    [shape.pattern],
  );
  return result.rows[0]!.n;
}

/** `count` + 1 (or `seconds`' worth of) sequential executions of the shape's first page (bodies as text, unparsed). */
export async function timePeerPage(
  client: pg.Client,
  shape: PageShape,
  name: string,
  count: number,
  seconds: number,
) {
  return summary(
    await timePrepared(client, name, pageSql(shape, 'body'), [shape.pattern], count + 1, seconds),
  );
}

export async function peerCount(
  client: pg.Client,
  shape: CountShape,
): Promise<{ count: number; ids: string[] }> {
  const pattern = searchPattern(shape.text);
  const count = await client.query<{ n: number }>(countSql(shape), [pattern]);
  const page = await client.query<{ id: string }>(countPageSql(shape), [pattern]);
  return { count: count.rows[0]!.n, ids: page.rows.map((r) => r.id) };
}

export async function timePeerCount(
  client: pg.Client,
  shape: CountShape,
  name: string,
  count: number,
  seconds: number,
) {
  return summary(
    await timePrepared(client, name, countSql(shape), [searchPattern(shape.text)], count + 1, seconds),
  );
}
