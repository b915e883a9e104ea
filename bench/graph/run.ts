/**
 * Provenance-graph benchmark on the embedded default, through HTTP on 127.0.0.1, requests one at
 * a time: `linked_instances` first pages from random biosamples, data objects and workflow
 * executions; `data_objects/study` for a study of about 100 biosamples and for the largest
 * study; the edge index's share of load time; and freshness (a record written, then asked for).
 *
 *   npm run bench:graph -- [--records 1000000] [--studies 1000] [--largest 10000] [--requests 500]
 *                          [--objects-per-biosample 10] [--compare-load]
 *
 * `--records` is the total record count aimed at; the generator's shape (biosamples, data
 * generations, workflow executions, tens of data objects per biosample) sets the split.
 * The load runs with the edge index attached after it (its build from the store is timed); with
 * `--compare-load` a second store is loaded with the edges written during the load.
 */
import { flag, percentile, startBenchServer, table, type BenchServer } from '../support/embedded.ts';
import { plannedCounts, type GenerateOptions } from '../../src/data/generator.ts';

const target = flag('records', 1_000_000);
const studies = flag('studies', 1000);
const largest = flag('largest', 10_000);
const requests = flag('requests', 500);
const compareLoad = process.argv.includes('--compare-load');
const perBiosample = flag('objects-per-biosample', 10);

/**
 * Biosamples and data objects giving about `target` records in all. By default 10 data objects
 * per biosample, as the shape (the largest study: 10^4 biosamples, 10^5 data objects):
 * the generator gives whole pipelines (about 30 data objects) to a third of the biosamples.
 */
function optionsFor(records: number): GenerateOptions {
  const base: GenerateOptions = {
    studies,
    biosamples: 10_000,
    dataObjects: 10_000 * perBiosample,
    largestStudyBiosamples: Math.min(largest, 10_000 - studies + 1),
  };
  const per = Object.values(plannedCounts(base)).reduce((a, b) => a + b, 0) / base.biosamples;
  const biosamples = Math.max(studies + largest, Math.round(records / per));
  return {
    ...base,
    biosamples,
    dataObjects: Math.round(biosamples * perBiosample),
    largestStudyBiosamples: largest,
  };
}

async function get(url: string): Promise<{ ms: number; status: number; body: any }> {
  const t0 = performance.now();
  const res = await fetch(url);
  const body = await res.json();
  return { ms: performance.now() - t0, status: res.status, body };
}

async function timeAll(base: string, paths: string[]): Promise<{ p50: number; p99: number; n: number }> {
  for (const p of paths.slice(0, 20)) await get(base + p); // warm-up
  const ms: number[] = [];
  for (const p of paths) {
    const r = await get(base + p);
    if (r.status !== 200) throw new Error(`${p}: ${r.status} ${JSON.stringify(r.body).slice(0, 200)}`);
    ms.push(r.ms);
  }
  return { p50: percentile(ms, 50), p99: percentile(ms, 99), n: ms.length };
}

/** Ids of a collection, a uniform sample (reservoir) over one scan in id order. */
async function sample(bench: BenchServer, collection: string, n: number): Promise<string[]> {
  const out: string[] = [];
  let seen = 0;
  for await (const batch of bench.store.scan(collection, 5000)) {
    for (const { id } of batch) {
      seen++;
      if (out.length < n) out.push(id);
      else {
        const j = Math.floor(Math.random() * seen);
        if (j < n) out[j] = id;
      }
    }
  }
  return out;
}

/** Studies with their biosample counts, from the edge index. */
async function studySizes(bench: BenchServer): Promise<Array<{ id: string; biosamples: number }>> {
  const out = [];
  for await (const batch of bench.store.scan('study_set', 1000)) {
    for (const s of batch) {
      const steps = await bench.edgeIndex.step([s.id], 'downstream');
      out.push({ id: s.id, biosamples: steps.filter((x) => x.collection === 'biosample_set').length });
    }
  }
  return out.sort((a, b) => a.biosamples - b.biosamples);
}

const enc = encodeURIComponent;

async function main(): Promise<void> {
  const options = optionsFor(target);
  const planned = plannedCounts(options);
  const total = Object.values(planned).reduce((a, b) => a + b, 0);
  process.stderr.write(
    `generating and loading ${total.toLocaleString('en-US')} records: ${JSON.stringify(planned)}\n`,
  );
  const bench = await startBenchServer(options, { edges: 'after' });
  const rows: Array<Record<string, string | number>> = [];
  try {
    const load = [
      { step: 'load (store + search index)', records: bench.records, seconds: bench.loadSeconds.toFixed(1) },
      {
        step: 'edge index built from the store',
        records: bench.records,
        seconds: bench.edgeBuildSeconds!.toFixed(1),
      },
    ];
    process.stdout.write(`\n${table(load)}\n`);
    process.stdout.write(
      `edge index build / load: ${((100 * bench.edgeBuildSeconds!) / bench.loadSeconds).toFixed(1)}%\n`,
    );

    const sizes = await studySizes(bench);
    const near100 = sizes.reduce((best, s) =>
      Math.abs(s.biosamples - 100) < Math.abs(best.biosamples - 100) ? s : best,
    );
    const biggest = sizes[sizes.length - 1]!;
    const ids = [
      ...(await sample(bench, 'biosample_set', Math.ceil(requests / 3))),
      ...(await sample(bench, 'data_object_set', Math.ceil(requests / 3))),
      ...(await sample(bench, 'workflow_execution_set', Math.ceil(requests / 3))),
    ].sort(() => Math.random() - 0.5);

    const first = await timeAll(
      bench.url,
      ids.map((id) => `/nmdcschema/linked_instances?ids=${enc(id)}`),
    );
    rows.push({
      request: 'linked_instances first page (random biosample / data object / workflow execution)',
      n: first.n,
      'p50 ms': first.p50.toFixed(1),
      'p99 ms': first.p99.toFixed(1),
    });
    const hydrated = await timeAll(
      bench.url,
      ids.slice(0, 200).map((id) => `/nmdcschema/linked_instances?ids=${enc(id)}&hydrate=true`),
    );
    rows.push({
      request: 'linked_instances first page, hydrate=true',
      n: hydrated.n,
      'p50 ms': hydrated.p50.toFixed(1),
      'p99 ms': hydrated.p99.toFixed(1),
    });
    const study100 = await get(`${bench.url}/data_objects/study/${enc(near100.id)}`);
    const objects100 = study100.body.reduce((n: number, g: any) => n + g.data_objects.length, 0);
    const s100 = await timeAll(
      bench.url,
      Array.from({ length: 50 }, () => `/data_objects/study/${enc(near100.id)}`),
    );
    rows.push({
      request: `data_objects/study, ${near100.biosamples} biosamples, ${objects100} data objects`,
      n: s100.n,
      'p50 ms': s100.p50.toFixed(1),
      'p99 ms': s100.p99.toFixed(1),
    });
    const bigFirst = await timeAll(
      bench.url,
      Array.from(
        { length: 10 },
        () => `/nmdcschema/linked_instances?ids=${enc(biggest.id)}&types=nmdc:DataObject`,
      ),
    );
    rows.push({
      request: `linked_instances first page, largest study (${biggest.biosamples} biosamples)`,
      n: bigFirst.n,
      'p50 ms': bigFirst.p50.toFixed(1),
      'p99 ms': bigFirst.p99.toFixed(1),
    });
    const bigStudy = await get(`${bench.url}/data_objects/study/${enc(biggest.id)}`);
    const bigObjects = bigStudy.body.reduce((n: number, g: any) => n + g.data_objects.length, 0);
    rows.push({
      request: `data_objects/study, largest study (${biggest.biosamples} biosamples, ${bigObjects} data objects, streamed)`,
      n: 1,
      'p50 ms': bigStudy.ms.toFixed(0),
      'p99 ms': '-',
    });

    // Freshness: a data object written now, linked from a sampled biosample's data generation.
    // A biosample that was sequenced (about a third are, in this shape).
    let bsm: string | undefined;
    let generation: { to: string } | undefined;
    for (const id of ids.filter((x) => x.includes(':bsm-'))) {
      [generation] = (await bench.edgeIndex.step([id], 'downstream')).filter(
        (s) => s.collection === 'data_generation_set',
      );
      if (generation) {
        bsm = id;
        break;
      }
    }
    const fresh = { id: 'nmdc:dobj-11-benchfresh', type: 'nmdc:DataObject', name: 'fresh' };
    const t0 = performance.now();
    const doc = (await bench.store.getById('data_generation_set', generation!.to))!;
    await bench.store.upsertMany('data_object_set', [fresh]);
    await bench.store.upsertMany('data_generation_set', [
      { ...doc, has_output: [...(doc.has_output as string[]), fresh.id] },
    ]);
    const seen = await get(
      `${bench.url}/nmdcschema/linked_instances?ids=${enc(bsm!)}&types=nmdc:DataObject&max_page_size=0`,
    );
    const found = seen.body.resources.some((r: any) => r.id === fresh.id);
    rows.push({
      request: `write, then linked_instances sees it: ${found ? 'yes' : 'NO'}`,
      n: 1,
      'p50 ms': (performance.now() - t0).toFixed(1),
      'p99 ms': '-',
    });
    process.stdout.write(`\n${table(rows)}\n`);
    process.stdout.write(
      "\nstaleness: ours 0 (edges are written in the records' transaction: the next request sees every write); " +
        'a graph copy rebuilt hourly is up to 60 minutes stale (30 on average), plus the rebuild time.\n',
    );
  } finally {
    await bench.close();
  }

  if (compareLoad) {
    const during = await startBenchServer(options, { edges: 'during' });
    try {
      process.stdout.write(
        `\nload with the edge index written during it: ${during.loadSeconds.toFixed(1)} s vs ${bench.loadSeconds.toFixed(1)} s without ` +
          `(+${((100 * (during.loadSeconds - bench.loadSeconds)) / bench.loadSeconds).toFixed(1)}%)\n`,
      );
    } finally {
      await during.close();
    }
  }
}

main().then(
  () => process.exit(0),
  (err) => {
    process.stderr.write(`bench:graph failed: ${err instanceof Error ? err.stack : String(err)}\n`);
    process.exit(1);
  },
);
