/**
 * README.md runs as written. Every fenced block of the README is one of:
 *
 * - a shell block (`sh`): run, in README order, in one bash session (variables and `cd` carry over
 *   from block to block, as in a reader's terminal) whose folder is a fresh copy of the project
 *   (its sources, contract, generated code and examples; its packages linked), with the service
 *   listening on a free port of 127.0.0.1 over `./data` of that copy, first started with the demo
 *   data, as `npm start` does;
 * - a file (`<!-- readme: file NAME -->` before it): written as NAME in the session's folder at
 *   that point, for the shell blocks after it to use;
 * - a page (`<!-- readme: page NAME -->`): served from another local port and opened in headless
 *   Chromium, which must show what the page writes without a script error;
 * - skipped, with the reason in the README itself (`<!-- readme: skip: REASON -->`), listed by
 *   this test;
 * - `text` (file trees, not code).
 *
 * A block of any other language without a marker fails the test, so a new example is run or
 * explicitly left out. The only changes made to the blocks are mechanical: the README's
 * `http://localhost:8080` (and `localhost:8080`) become the test server's address, and `curl` is
 * wrapped so that an HTTP error fails its block, unless the command announces that status (a
 * trailing `# 404 ...` or a following `# -> 422 ...` comment), in which case any other status fails.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { prepareData } from '../../src/startup.ts';
import { startTestServer, type TestServer } from '../support/server.ts';
import { launchChromium } from '../browser/chromium.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');
const README = path.join(ROOT, 'README.md');
/** What the session's copy of the project holds (a clone needs no more to run every block). */
const COPIED = [
  'package.json',
  'package-lock.json',
  'tsconfig.json',
  'openapi.yaml',
  'README.md',
  'src',
  'search',
  'scripts',
  'generated',
  'examples',
  'config',
];
const SHELLS = new Set(['sh', 'bash', 'shell']);

interface ReadmeBlock {
  /** 1-based line of the opening fence. */
  line: number;
  lang: string;
  text: string;
  marker?: { kind: 'skip'; reason: string } | { kind: 'file' | 'page'; name: string };
}

/** The fenced blocks of a Markdown text, with the `<!-- readme: ... -->` marker before each. */
function readmeBlocks(markdown: string): ReadmeBlock[] {
  const lines = markdown.split('\n');
  const blocks: ReadmeBlock[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^(\s*)(`{3,}|~{3,})\s*([\w-]*)\s*$/.exec(lines[i]!);
    if (!open) continue;
    const [, indent, fence, lang] = open;
    const body: string[] = [];
    let j = i + 1;
    for (; j < lines.length && lines[j]!.trim() !== fence; j++) body.push(lines[j]!.slice(indent!.length));
    if (j === lines.length) throw new Error(`README.md:${i + 1}: the block is never closed`);
    let k = i - 1;
    while (k >= 0 && lines[k]!.trim() === '') k--;
    const comment = k >= 0 ? /^\s*<!--\s*readme:\s*(.*?)\s*-->\s*$/.exec(lines[k]!) : null;
    let marker: ReadmeBlock['marker'];
    if (comment) {
      const m = /^(skip):\s*(.+)$|^(file|page)\s+(\S+)$/.exec(comment[1]!);
      if (!m) throw new Error(`README.md:${k + 1}: unknown readme marker "${comment[1]}"`);
      marker = m[1] ? { kind: 'skip', reason: m[2]! } : { kind: m[3] as 'file' | 'page', name: m[4]! };
    }
    blocks.push({ line: i + 1, lang: lang!, text: `${body.join('\n')}\n`, marker });
    i = j;
  }
  return blocks;
}

/** The README's address of the service replaced by the test server's. */
function withServiceUrl(text: string, url: string): string {
  return text
    .replaceAll('http://localhost:8080', url)
    .replaceAll(/(?<![\w/.-])localhost:8080/g, new URL(url).host);
}

/**
 * A shell block with the HTTP status each `curl` command announces: `README_EXPECT=<status>`
 * before a command that starts with `curl` and ends in a `# <status> ...` comment or is followed
 * by a `# -> <status> ...` line.
 */
function withExpectedStatuses(script: string): string {
  const lines = script.split('\n');
  const out: string[] = [];
  for (let i = 0; i < lines.length; i++) {
    const first = i;
    while (lines[i]!.endsWith('\\') && i + 1 < lines.length) i++;
    const command = lines.slice(first, i + 1);
    const trailing = /\s#\s*(?:->\s*)?(\d{3})\b[^'"]*$/.exec(command.at(-1)!);
    const following = /^\s*#\s*->\s*(\d{3})\b/.exec(lines[i + 1] ?? '');
    const status = trailing?.[1] ?? following?.[1];
    if (status && /^\s*curl\s/.test(command[0]!))
      command[0] = command[0]!.replace(/^(\s*)curl\s/, `$1README_EXPECT=${status} curl `);
    out.push(...command);
  }
  return out.join('\n');
}

/** bash functions every block runs with: `curl` failing on an HTTP error it was not told of. */
const PRELUDE = String.raw`
set -eo pipefail
curl() {
  local body status
  body=$(mktemp)
  if ! status=$(command curl -sS -o "$body" -w '%{http_code}' "$@"); then
    cat "$body"; rm -f "$body"; echo "README: curl failed: curl $*" >&2; return 1
  fi
  cat "$body"; rm -f "$body"
  echo "$status ${'$'}{README_EXPECT:-} curl $*" >> "$README_HTTP_LOG"
  if [ -n "${'$'}{README_EXPECT:-}" ]; then
    if [ "$status" != "$README_EXPECT" ]; then
      echo "README: HTTP $status (the README says $README_EXPECT) from curl $*" >&2; return 1
    fi
  elif [ "$status" -ge 400 ]; then
    echo "README: HTTP $status from curl $*" >&2; return 1
  fi
}
`;

const blocks = readmeBlocks(fs.readFileSync(README, 'utf8'));

let server: TestServer;
let work: string;
let clone: string;

beforeAll(async () => {
  work = fs.mkdtempSync(path.join(os.tmpdir(), 'nmdc-readme-'));
  clone = path.join(work, 'nmdc-service');
  fs.mkdirSync(clone);
  for (const entry of COPIED) fs.cpSync(path.join(ROOT, entry), path.join(clone, entry), { recursive: true });
  // node_modules of the copy is a folder of links to the project's packages, so a block that
  // reinstalls (npm ci removes node_modules) removes the links, never the project's packages.
  fs.mkdirSync(path.join(clone, 'node_modules'));
  for (const entry of fs.readdirSync(path.join(ROOT, 'node_modules')))
    fs.symlinkSync(path.join(ROOT, 'node_modules', entry), path.join(clone, 'node_modules', entry));
  // As `npm start` in the copy: ./data, demo data and its administrator on first start.
  server = await startTestServer({ DATA_DIR: path.join(clone, 'data'), DEMO_DATA: 'true' });
  await prepareData(server);
}, 120_000);

afterAll(async () => {
  await server?.close();
  if (work) fs.rmSync(work, { recursive: true, force: true });
});

describe('README.md', () => {
  it('has only blocks that are run, saved as files, opened as pages, plain text or skipped with a reason', () => {
    const unknown = blocks.filter(
      (b) => !b.marker && !SHELLS.has(b.lang) && b.lang !== 'text' && b.lang !== '',
    );
    expect(unknown.map((b) => `README.md:${b.line} (${b.lang})`)).toEqual([]);
    const unlabelled = blocks.filter((b) => !b.marker && b.lang === '');
    expect(
      unlabelled.map((b) => `README.md:${b.line}`),
      'a block without a language: mark it text, or give its language',
    ).toEqual([]);
    const pages = blocks.filter((b) => b.marker?.kind === 'page');
    expect(pages.every((b) => b.lang === 'html')).toBe(true);
  });

  it('runs every shell block and example as written', async () => {
    const dir = path.join(work, 'blocks');
    fs.mkdirSync(dir);
    const httpLog = path.join(work, 'http.log');
    const steps: string[] = [PRELUDE, `cd ${JSON.stringify(clone)}`];
    const pages: Array<{ block: ReadmeBlock; file: string }> = [];
    for (const block of blocks) {
      const text = withServiceUrl(block.text, server.url);
      const name = `${block.line}`;
      if (block.marker?.kind === 'skip' || block.lang === 'text') continue;
      if (block.marker?.kind === 'file' || block.marker?.kind === 'page') {
        fs.writeFileSync(path.join(dir, name), text);
        steps.push(`cp ${JSON.stringify(path.join(dir, name))} ./${block.marker.name}`);
        if (block.marker.kind === 'page') pages.push({ block, file: block.marker.name });
        if (block.marker.kind === 'page')
          steps.push(`echo "$PWD" > ${JSON.stringify(path.join(dir, 'page-dir'))}`);
        continue;
      }
      fs.writeFileSync(path.join(dir, name), withExpectedStatuses(text));
      steps.push(`echo "::README.md:${block.line}"; echo "::README.md:${block.line}" >&2`);
      steps.push(`source ${JSON.stringify(path.join(dir, name))}`);
    }
    steps.push('echo "::done"');
    const script = path.join(dir, 'session.sh');
    fs.writeFileSync(script, steps.join('\n'));
    const result = await runSession(script, {
      README_HTTP_LOG: httpLog,
      // The session is offline: npm installs only the local tarball.
      npm_config_offline: 'true',
      npm_config_audit: 'false',
      npm_config_fund: 'false',
      npm_config_update_notifier: 'false',
    });
    const last = [...result.stdout.matchAll(/^::(README\.md:\d+)$/gm)].at(-1)?.[1];
    expect(
      result.code,
      `the README block at ${last} failed (exit ${result.code}):\n${tail(result.stdout)}\n--- stderr ---\n${tail(result.stderr)}`,
    ).toBe(0);
    expect(result.stdout).toMatch(/^::done$/m);
    // What the programs printed: the SDK snippet (run with plain node from its own project) and
    // the site worker.
    expect(result.stdout).toMatch(/^[1-9]\d* plant biosamples; first: nmdc:bsm-11-\w+$/m);
    expect(result.stdout).toMatch(/^[1-9]\d* data objects from nmdc:bsm-11-02g8ftqk$/m);
    expect(result.stdout).toMatch(/^operation nmdc:sys0\w+ done$/m);

    // What the blocks printed is what the demo data and the service say.
    // Each request a block made, with its status and the status the README announced for it.
    const requests = fs.readFileSync(httpLog, 'utf8').trim().split('\n');
    expect(requests.length).toBeGreaterThan(30);
    const announced = requests.filter((r) => /^\d{3} \d{3} /.test(r));
    expect(announced.every((r) => r.slice(0, 3) === r.slice(4, 7))).toBe(true);
    expect(announced.some((r) => /^422 422 curl .*queries:run/.test(r))).toBe(true);
    expect(announced.some((r) => /^401 401 curl .*users\/me/.test(r))).toBe(true);
    for (const { block, file } of pages) {
      const folder = fs.readFileSync(path.join(dir, 'page-dir'), 'utf8').trim();
      const shown = await openPage(path.join(folder, file));
      expect(shown.errors, `README.md:${block.line}`).toEqual([]);
      const plants = (await (
        await fetch(`${server.url}/biosamples?filter=ecosystem_category:Plants&per_page=5`)
      ).json()) as {
        meta: { count: number };
        results: Array<{ id: string }>;
      };
      expect(plants.meta.count).toBeGreaterThan(0);
      expect(shown.text, `README.md:${block.line}`).toBe(
        `${plants.meta.count} plant biosamples, first: ${plants.results[0]!.id}`,
      );
    }
  }, 400_000);

  it('lists what it does not run, each with the reason the README gives', () => {
    const skipped = blocks
      .filter((b) => b.marker?.kind === 'skip')
      .map((b) => `README.md:${b.line} (${b.lang}): ${(b.marker as { reason: string }).reason}`);
    console.log(`README blocks not run:\n${skipped.join('\n')}`);
    for (const line of skipped) expect(line).toMatch(/\): \S.{15,}/);
    expect(blocks.filter((b) => SHELLS.has(b.lang) && !b.marker).length).toBeGreaterThan(10);
  });
});

function tail(text: string, lines = 60): string {
  return text.split('\n').slice(-lines).join('\n');
}

/** The session's process group while it runs (ended by afterAll if the test is cut short). */
let session: number | undefined;
/** Longest a block may run: one that does not end (a server started in it) fails the test. */
const BLOCK_LIMIT_MS = 150_000;

/** Kills the session's whole process group (gone already: nothing to do). */
function stopSession(pid: number): void {
  try {
    process.kill(-pid, 'SIGKILL');
  } catch {
    // ESRCH: the group has ended.
  }
}

afterAll(() => {
  if (session !== undefined) stopSession(session);
});

/** Runs the session in its own process group, killed whole when a block outlives its limit. */
function runSession(
  script: string,
  env: Record<string, string>,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn('bash', [script], {
      cwd: clone,
      env: { ...process.env, ...env },
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    session = child.pid;
    let stdout = '';
    let stderr = '';
    let blockStarted = Date.now();
    child.stdout.on('data', (d: Buffer) => {
      const text = d.toString();
      if (text.includes('::README.md:')) blockStarted = Date.now();
      stdout += text;
    });
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const watch = setInterval(() => {
      if (Date.now() - blockStarted < BLOCK_LIMIT_MS) return;
      stderr += `\nREADME: the block ran longer than ${BLOCK_LIMIT_MS / 1000} s; stopped`;
      stopSession(child.pid!);
    }, 1_000);
    child.on('close', (code) => {
      clearInterval(watch);
      session = undefined;
      resolve({ code, stdout, stderr });
    });
  });
}

/**
 * Serves the page's folder on http://localhost:<free port> (an origin the default CORS rule
 * allows) and opens the page in headless Chromium; answers what the page shows and its errors.
 */
async function openPage(file: string): Promise<{ text: string; errors: string[] }> {
  const site: Server = createServer((req, res) => {
    const wanted = path.join(path.dirname(file), path.basename(new URL(req.url!, 'http://x').pathname));
    if (req.url === '/favicon.ico') return res.writeHead(204).end();
    if (!fs.existsSync(wanted)) return res.writeHead(404).end();
    res.writeHead(200, { 'content-type': 'text/html' }).end(fs.readFileSync(wanted));
  });
  await new Promise<void>((resolve) => site.listen(0, '127.0.0.1', resolve));
  const browser = await launchChromium();
  try {
    const page = await browser.newPage();
    const errors: string[] = [];
    page.on('pageerror', (err) => errors.push(err.message));
    page.on('console', (m) => m.type() === 'error' && errors.push(m.text()));
    page.on('response', (r) => r.status() >= 400 && errors.push(`${r.status()} ${r.url()}`));
    const port = (site.address() as AddressInfo).port;
    await page.goto(`http://localhost:${port}/${path.basename(file)}`);
    await page.waitForFunction(() => document.body.textContent!.trim() !== '', undefined, {
      timeout: 15_000,
    });
    return { text: (await page.textContent('body'))!.trim(), errors };
  } finally {
    await browser.close();
    site.closeAllConnections();
    await new Promise<void>((resolve) => site.close(() => resolve()));
  }
}
