/**
 * Metadata submission benchmark on the embedded default (SQLite store, FTS5 search index, edge
 * index), two figures:
 *
 * 1. validation throughput: generated biosamples of one existing study checked by
 *    `MetadataValidator.validateDatabase` (JSON Schema, then references against the store), in
 *    biosamples per second (target >= 20,000/s);
 * 2. a submission of 100,000 generated biosamples through HTTP: `POST /metadata/json:submit` to
 *    the service (src/main.ts, `NODE_ENV=production`) in a process of its own on 127.0.0.1, sent
 *    by a client in another, timed from sending the (already serialised) body to the answer, with
 *    the server's own phases from `GET /runs/{run_id}` (target <= 15 s).
 *
 * `--write-thread 0` writes on the server's main thread (`WRITE_THREAD=false`), for comparison.
 *
 *   npm run bench:submit -- [--biosamples 100000] [--validate 100000] [--write-thread 0]
 */
import { flag, table } from '../support/embedded.ts';
import { measureSubmit } from '../support/submit.ts';

const biosamples = flag('biosamples', 100_000);
const validateCount = flag('validate', 100_000);
const writeThread = flag('write-thread', 1) !== 0;

async function main(): Promise<void> {
  const f = await measureSubmit({ biosamples, validate: validateCount, writeThread });
  console.log('\nMetadata submission on the embedded default (SQLite + FTS5 + edge index)\n');
  console.log(
    table([
      ...(f.validateRate === undefined
        ? []
        : [
            {
              measure: 'validation throughput (MetadataValidator, service layer)',
              figure: `${Math.round(f.validateRate).toLocaleString('en-US')} biosamples/s`,
              detail: `${f.validateCount} biosamples in ${f.validateSeconds!.toFixed(2)} s`,
              target: '>= 20,000/s',
            },
          ]),
      {
        measure: `submit ${biosamples.toLocaleString('en-US')} biosamples (HTTP, 127.0.0.1)`,
        figure: `${f.submitSeconds.toFixed(1)} s`,
        detail: `server: ${Object.entries(f.timingsMs)
          .map(([phase, ms]) => `${phase} ${(ms / 1000).toFixed(1)} s`)
          .join(
            ', ',
          )}; ${Math.round(biosamples / f.submitSeconds).toLocaleString('en-US')} biosamples/s; ${f.cpuSeconds.toFixed(1)} CPU s${
          f.mainThreadCpuSeconds === undefined ? '' : ` (main thread ${f.mainThreadCpuSeconds.toFixed(1)})`
        }${
          f.busiestThreadCpuSeconds === undefined
            ? ''
            : `; busiest other thread (the writing one) ${f.busiestThreadCpuSeconds.toFixed(1)} CPU s`
        }; event loop held up to ${(f.maxEventLoopDelayMs / 1000).toFixed(1)} s`,
        target: '<= 15 s',
      },
    ]),
  );
  console.log(`\ninserted: ${JSON.stringify(f.counts)}; payload ${(f.payloadBytes / 1e6).toFixed(1)} MB`);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
