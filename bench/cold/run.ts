/**
 * `npm run bench:cold` — first requests on a store file the OS has not cached (a restart, a store
 * larger than memory): how long each takes, and how long the service keeps everyone else waiting
 * meanwhile. Each request is sent once while `GET /version` is sent every 5 ms; the longest of
 * those waits is what the request held the event loop (and every other request) for.
 *
 *   npm run bench:cold -- [--biosamples 100000] [--data-dir <a loaded data folder>] [--no-drop]
 *
 * The OS page cache is dropped before the server starts (`/proc/sys/vm/drop_caches`: as root);
 * `--no-drop` measures a warm file for comparison. The service reads its file into the OS cache in
 * the background once it answers (`STORE_PREWARM`, default true), so the requests share the disk
 * with that reading; `STORE_PREWARM=false npm run bench:cold` measures them alone. Without
 * `--data-dir`, `--biosamples` generated biosamples are loaded into a fresh folder first. The paths
 * suit generated data.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import { startServerProcess } from '../support/server-process.ts';
import { loadReadData } from '../support/read-workload.ts';

const argv = process.argv.slice(2);
const valueOf = (name: string) =>
  argv.includes(`--${name}`) ? argv[argv.indexOf(`--${name}`) + 1] : undefined;
const biosamples = Number(valueOf('biosamples') ?? 100_000);
const reuse = valueOf('data-dir');
const drop = !argv.includes('--no-drop');
/** The longest a request may hold the others, ms (the project's standard). */
const HOLD_LIMIT_MS = 100;

const json = (filter: object) => encodeURIComponent(JSON.stringify(filter));
const PATHS = [
  '/biosamples?per_page=25',
  '/biosamples?filter=collection_date.has_raw_value.search:-03-&per_page=25',
  '/biosamples?filter=ecosystem_category:Terrestrial&sort=name&per_page=25',
  `/nmdcschema/biosample_set?filter=${json({ name: { $regex: 'a.e' } })}&max_page_size=25`,
  '/biosamples?filter=name.search:sample&per_page=25',
  `/nmdcschema/biosample_set?filter=${json({ ecosystem_category: 'Terrestrial' })}&max_page_size=25`,
];

/** Sends `path` once while probing `/version` every 5 ms: its time and the longest probe's. */
async function probe(url: string, path: string) {
  let stop = false;
  let longest = 0;
  const probing = (async () => {
    while (!stop) {
      const t = performance.now();
      await (await fetch(`${url}/version`)).text();
      longest = Math.max(longest, performance.now() - t);
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
  })();
  const t0 = performance.now();
  const res = await fetch(url + path);
  await res.text();
  const ms = performance.now() - t0;
  stop = true;
  await probing;
  return { status: res.status, ms, longest };
}

function dropCaches(): string {
  try {
    execFileSync('sync');
    fs.writeFileSync('/proc/sys/vm/drop_caches', '3\n');
    return 'dropped';
  } catch (err) {
    return `not dropped (${err instanceof Error ? err.message : String(err)}): the file may be cached`;
  }
}

async function main(): Promise<void> {
  const loaded = reuse ? undefined : loadReadData(biosamples);
  const dataDir = reuse ?? loaded!.dataDir;
  try {
    const cache = drop ? dropCaches() : 'kept (--no-drop)';
    const server = await startServerProcess(dataDir, 1);
    try {
      const lines = [
        `npm run bench:cold -- ${argv.join(' ')}`,
        `store: ${dataDir}${loaded ? ` (${biosamples} generated biosamples, loaded in ${loaded.seconds.toFixed(1)} s)` : ''}; OS page cache ${cache}`,
        // The service reads its file into the OS cache once it answers: these requests share the disk with it.
        `STORE_PREWARM=${/^(false|0|no)$/i.test(process.env.STORE_PREWARM ?? '') ? 'false: the file is not read ahead' : 'true: the file is read into the OS cache meanwhile'}`,
        '',
        `| first request | status | ms | longest /version wait, ms | within ${HOLD_LIMIT_MS} ms |`,
        '| --- | --- | --- | --- | --- |',
      ];
      let worst = 0;
      for (const path of PATHS) {
        const r = await probe(server.url, path);
        worst = Math.max(worst, r.longest);
        lines.push(
          `| \`${decodeURIComponent(path)}\` | ${r.status} | ${r.ms.toFixed(1)} | ${r.longest.toFixed(1)} | ${r.longest <= HOLD_LIMIT_MS ? 'yes' : 'no'} |`,
        );
      }
      lines.push('', `longest wait: ${worst.toFixed(1)} ms`);
      process.stdout.write(`${lines.join('\n')}\n`);
    } finally {
      await server.stop();
    }
  } finally {
    if (loaded) fs.rmSync(loaded.dataDir, { recursive: true, force: true });
  }
}

main().catch((err) => {
  process.stderr.write(`cold benchmark failed: ${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
