/**
 * Writes through `POST /queries:run` on the embedded default, with every check on (statements,
 * schema validation of the records as they would become, references) beside the same command
 * with `allow_broken_refs=true` (the reference checks skipped), on generated records: studies,
 * biosamples (the largest study holding `--largest` of them), data generations and their
 * pipelines. For each command: its time, the longest the server's event loop was held while it
 * ran, and the slowest `GET /version` answered meanwhile (one probe every 10 ms).
 *
 *   npm run bench:writes -- [--biosamples 50000] [--largest 10000] [--studies 20] [--objects 3000]
 */
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { flag, percentile, startBenchServer, table, timedRuns } from '../support/embedded.ts';
import { generatedIds, studyIdWithBiosamples, type GenerateOptions } from '../../src/data/generator.ts';
import { compileSchema } from '../../src/validation/index.ts';

const options: GenerateOptions = {
  studies: flag('studies', 20),
  biosamples: flag('biosamples', 50_000),
  largestStudyBiosamples: flag('largest', 10_000),
  dataObjects: flag('objects', 3000),
};
const ADMIN = { username: 'bench-writes-admin', password: 'bench writes admin passphrase 7' };
const log = (line: string) => process.stderr.write(`${line}\n`);

interface Measured {
  ms: number;
  status: number;
  body: Record<string, unknown>;
  /** Longest event-loop delay seen while the command ran, ms. */
  heldMs: number;
  /** Slowest GET /version answered while the command ran, ms. */
  probeMs: number;
}

async function main(): Promise<void> {
  log(`loading ${options.biosamples} biosamples of ${options.studies} studies and their lineage`);
  const server = await startBenchServer(options, {
    env: { ADMIN_USERNAME: ADMIN.username, ADMIN_PASSWORD: ADMIN.password, MAX_BODY_BYTES: String(64 << 20) },
  });
  try {
    const token = (
      (await (
        await fetch(`${server.url}/token`, {
          method: 'POST',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          body: new URLSearchParams({ grant_type: 'password', ...ADMIN }),
        })
      ).json()) as { access_token: string }
    ).access_token;

    const send = async (body: unknown, query = '') => {
      const res = await fetch(`${server.url}/queries:run${query}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
        body: JSON.stringify(body),
      });
      return { status: res.status, body: (await res.json()) as Record<string, unknown> };
    };

    /** One command, with the event loop and a concurrent probe watched. */
    const measure = async (body: unknown, query = ''): Promise<Measured> => {
      const delay = monitorEventLoopDelay({ resolution: 5 });
      let probeMs = 0;
      let running = true;
      const probe = (async () => {
        while (running) {
          const t0 = performance.now();
          await (await fetch(`${server.url}/version`)).arrayBuffer();
          probeMs = Math.max(probeMs, performance.now() - t0);
          await new Promise((r) => setTimeout(r, 10));
        }
      })();
      delay.enable();
      const t0 = performance.now();
      const { status, body: answer } = await send(body, query);
      const ms = performance.now() - t0;
      delay.disable();
      running = false;
      await probe;
      return { ms, status, body: answer, heldMs: delay.max / 1e6, probeMs };
    };

    const ids = generatedIds(options.seed);
    const largest = studyIdWithBiosamples(options, options.largestStudyBiosamples!)!;
    const largestSize = options.largestStudyBiosamples!;
    const rows: Array<Record<string, string | number>> = [];
    const row = (what: string, checked: Measured, unchecked?: Measured) =>
      rows.push({
        command: what,
        checked: `${checked.status} in ${checked.ms.toFixed(0)} ms (loop held ${checked.heldMs.toFixed(0)} ms, /version ${checked.probeMs.toFixed(0)} ms)`,
        'allow_broken_refs=true': unchecked
          ? `${unchecked.status} in ${unchecked.ms.toFixed(0)} ms (loop held ${unchecked.heldMs.toFixed(0)} ms, /version ${unchecked.probeMs.toFixed(0)} ms)`
          : '-',
        answer: JSON.stringify(checked.body).slice(0, 60),
      });

    // 1. One biosample renamed, many times: latency of a small update, checked and not, in turns
    // (after the first one).
    const one = (i: number) => ({
      update: 'biosample_set',
      updates: [{ q: { id: ids.biosample(i) }, u: { $set: { name: `renamed ${i}` } } }],
    });
    // As `npm start` does before it listens (src/main.ts).
    const compiling = performance.now();
    compileSchema();
    rows.push({
      command: 'schema validators compiled before serving',
      checked: `${(performance.now() - compiling).toFixed(0)} ms`,
      'allow_broken_refs=true': '',
      answer: '',
    });
    const warm = await measure(one(0));
    row('first update after start', warm);
    const small: Record<string, number[]> = { checked: [], unchecked: [] };
    await timedRuns(400, 30, async (i) => {
      const [label, query] = i % 2 ? ['unchecked', '?allow_broken_refs=true'] : ['checked', ''];
      const t0 = performance.now();
      const r = await send(one(i + 1), query);
      small[label]!.push(performance.now() - t0);
      if (r.status !== 200) throw new Error(`${label}: ${r.status} ${JSON.stringify(r.body)}`);
    });
    const figures = (times: number[]) =>
      `p50 ${percentile(times, 50).toFixed(1)} ms, p99 ${percentile(times, 99).toFixed(1)} ms (${times.length} runs)`;
    rows.push({
      command: 'update one biosample by id ($set name)',
      checked: figures(small.checked!),
      'allow_broken_refs=true': figures(small.unchecked!),
      answer: '',
    });

    // 2. Every biosample of the largest study: one multi update.
    const multi = (text: string) => ({
      update: 'biosample_set',
      updates: [{ q: { associated_studies: largest }, u: { $set: { description: text } }, multi: true }],
    });
    row(
      `update ${largestSize} biosamples (multi $set)`,
      await measure(multi('pass 1')),
      await measure(multi('pass 2'), '?allow_broken_refs=true'),
    );

    // 3. A delete that would break references: the largest study (its biosamples reference it).
    const studyDelete = { delete: 'study_set', deletes: [{ q: { id: largest }, limit: 1 }] };
    row(`delete a study ${largestSize} biosamples reference (refused)`, await measure(studyDelete));

    // 4. The hostile requests of the issue: a $set the schema refuses, an operand of the wrong type,
    // a delete statement without q.
    const badSet = await measure({
      update: 'biosample_set',
      updates: [{ q: { id: ids.biosample(1) }, u: { $set: { name: 12345, not_a_slot: true } } }],
    });
    const stored = await send({
      find: 'biosample_set',
      filter: { id: ids.biosample(1) },
      projection: { name: 1 },
    });
    row(
      `$set {"name": 12345, "not_a_slot": true} (name stored after: ${JSON.stringify((stored.body.cursor as { batch: Array<{ name: unknown }> }).batch[0]?.name)})`,
      badSet,
    );
    row(
      '{"$unset": "notes"}',
      await measure({
        update: 'biosample_set',
        updates: [{ q: { id: ids.biosample(1) }, u: { $unset: 'notes' } }],
      }),
    );
    const before = await send({ count: 'biosample_set', query: {} });
    const noFilter = await measure({ delete: 'biosample_set', deletes: [{ id: ids.biosample(0) }] });
    const after = await send({ count: 'biosample_set', query: {} });
    row(`delete without q (biosamples before ${before.body.n}, after ${after.body.n})`, noFilter);

    // 5. A whole study's biosamples deleted: the references to each are looked for first.
    const biosampleDelete = (query: string) =>
      measure(
        { delete: 'biosample_set', deletes: [{ q: { associated_studies: largest }, limit: 0 }] },
        query,
      );
    row(
      `delete ${largestSize} biosamples of a study`,
      await biosampleDelete(''),
      await biosampleDelete('?allow_broken_refs=true'),
    );

    console.log('\n/queries:run writes on the embedded default (SQLite store, FTS5 index, edge index)\n');
    console.log(table(rows));
    console.log(
      `\n${server.records} records; largest study ${largest}; event loop watched at 5 ms resolution, /version probed every 10 ms`,
    );
  } finally {
    await server.close();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
