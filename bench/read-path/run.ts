/**
 * Read-path benchmark on the embedded default: by-id, indexed finds and cursor paging through
 * HTTP on loopback, against a full-scan evaluation of the same filters in the same run.
 *
 *   npm run bench:read-path -- [--biosamples 100000] [--data-objects 1000000] [--studies 10] [--seconds 10]
 *     [--workers <cores>]   (server processes, separate from this load generator)
 */
import os from 'node:os';
import { compileFilter } from '../../src/store/filter.ts';
import type { Filter } from '../../src/store/port.ts';
import { flag, hammer, percentile, startBenchServer, table, timeEach } from '../support/embedded.ts';

const biosamples = flag('biosamples', 100_000);
const dataObjects = flag('data-objects', 1_000_000);
const studies = flag('studies', 10);
const seconds = flag('seconds', 10);
const workers = flag('workers', os.availableParallelism());

async function fullScanMs(
  server: Awaited<ReturnType<typeof startBenchServer>>,
  collection: string,
  filter: Filter,
): Promise<number> {
  const predicate = compileFilter(filter);
  const t0 = performance.now();
  let matches = 0;
  for await (const batch of server.store.scan(collection, 5000))
    for (const doc of batch) if (predicate(doc)) matches++;
  if (matches === 0) throw new Error(`scan of ${JSON.stringify(filter)} matched nothing`);
  return performance.now() - t0;
}

async function main() {
  console.error(`loading ${studies} studies, ${biosamples} biosamples, ${dataObjects} data objects ...`);
  const server = await startBenchServer({ studies, biosamples, dataObjects, seed: 7 }, { workers });
  console.error(
    `loaded ${server.records} records in ${server.loadSeconds.toFixed(1)} s (${Math.round(server.records / server.loadSeconds)} records/s)`,
  );
  try {
    const sampleIds = (
      await server.store.find('biosample_set', {}, { limit: 2000, skip: Math.floor(biosamples / 3) })
    ).map((d) => d.id);
    const studyIds = (await server.store.find('study_set', {})).map((d) => d.id);
    const enc = encodeURIComponent;
    const rows: Array<Record<string, string | number>> = [];

    const scenario = async (name: string, paths: string[], collection: string, filter: Filter | null) => {
      await hammer(server.url, paths.slice(0, 50), 1); // warm-up
      const f = await hammer(server.url, paths, seconds);
      const alone = await timeEach(
        Array.from({ length: 100 }, (_, i) => `${server.url}${paths[i % paths.length]}`),
      );
      const scan = filter ? await fullScanMs(server, collection, filter) : NaN;
      rows.push({
        scenario: name,
        '1-conn p50 ms': percentile(alone, 50).toFixed(1),
        '1-conn p99 ms': percentile(alone, 99).toFixed(1),
        'p50 ms': f.p50,
        'p99 ms': f.p99,
        'req/s': Math.round(f.rps),
        'errors+non2xx': f.errors + f.non2xx,
        'full scan ms': Number.isNaN(scan) ? '-' : scan.toFixed(0),
        'scan / p50': Number.isNaN(scan) ? '-' : `${(scan / Math.max(f.p50, 0.5)).toFixed(0)}x`,
      });
    };

    await scenario(
      'by-id GET /biosamples/{id}',
      sampleIds.map((id) => `/biosamples/${enc(id)}`),
      'biosample_set',
      null,
    );
    await scenario(
      'find, one equality (associated_studies), page of 25',
      studyIds.map((id) => `/biosamples?filter=${enc(`associated_studies:${id}`)}&per_page=25`),
      'biosample_set',
      { associated_studies: studyIds[0]! },
    );
    await scenario(
      'find, two filters + sort, page of 25',
      [
        `/biosamples?filter=${enc('ecosystem_category:Plants,ecosystem_type:Rhizosphere')}&sort=depth.has_numeric_value:desc&per_page=25`,
      ],
      'biosample_set',
      { ecosystem_category: 'Plants', ecosystem_type: 'Rhizosphere' },
    );
    await scenario(
      'find data objects by type, page of 25',
      [`/data_objects?filter=${enc('data_object_type:Assembly Contigs')}&per_page=25`],
      'data_object_set',
      { data_object_type: 'Assembly Contigs' },
    );

    // Cursor paging through every match of one study's biosamples (about biosamples/studies records).
    const pageTimes: number[] = [];
    let cursor = '*';
    let seen = 0;
    for (;;) {
      const url = `${server.url}/biosamples?filter=${enc(`associated_studies:${studyIds[1]}`)}&per_page=100&cursor=${enc(cursor)}`;
      const t0 = performance.now();
      const body = (await (await fetch(url)).json()) as {
        results: unknown[];
        meta: { next_cursor: string | null };
      };
      pageTimes.push(performance.now() - t0);
      seen += body.results.length;
      if (!body.meta.next_cursor) break;
      cursor = body.meta.next_cursor;
    }
    const tenth = Math.max(1, Math.floor(pageTimes.length / 10));
    console.log(
      `\nRead path, embedded SQLite: ${biosamples} biosamples, ${dataObjects} data objects, ${studies} studies; ${seconds} s per scenario at 10 connections (p50/p99/req/s), plus 100 sequential requests on one connection; ${workers} server process(es), load average ${os.loadavg()[0]!.toFixed(2)} on ${os.cpus().length} cores\n`,
    );
    console.log(table(rows));
    console.log(
      `\nCursor paging: ${seen} records in ${pageTimes.length} pages of 100; ` +
        `median first ${tenth} pages ${percentile(pageTimes.slice(0, tenth), 50).toFixed(1)} ms, ` +
        `median last ${tenth} pages ${percentile(pageTimes.slice(-tenth), 50).toFixed(1)} ms, ` +
        `p99 ${percentile(pageTimes, 99).toFixed(1)} ms`,
    );
    const single = await timeEach(sampleIds.slice(0, 200).map((id) => `${server.url}/biosamples/${enc(id)}`));
    console.log(
      `Sequential by-id (one connection): p50 ${percentile(single, 50).toFixed(2)} ms, p99 ${percentile(single, 99).toFixed(2)} ms`,
    );
  } finally {
    await server.close();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
