/**
 * Every command-line tool answers `--help` with its usage on stdout and exit status 0, before
 * opening any store; collection arguments are checked; generate-data creates its output folder.
 */
import { execFile, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';

const ROOT = path.resolve(import.meta.dirname, '../..');
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'nmdc-cli-help-'));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

async function run(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    // One Node process per tool (`node_modules/.bin/tsx` would start a second one to run it).
    const { stdout, stderr } = await promisify(execFile)(process.execPath, ['--import', 'tsx', ...args], {
      cwd: ROOT,
      // A data folder that must not come into being: --help opens nothing.
      env: { ...process.env, DATA_DIR: path.join(dir, 'never'), LOG_LEVEL: 'silent' },
      timeout: 60_000,
    });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

/** Each tool, the first words of its usage, and what else the usage must say. */
const TOOLS: Array<[string, string, string[]]> = [
  ['src/cli/reindex.ts', 'usage: npm run reindex [-- COLLECTION...]', []],
  ['src/cli/check-index.ts', 'usage: npm run check-index [-- COLLECTION...]', []],
  ['src/cli/create-admin.ts', 'usage: npm run create-admin -- --username U [--password P]', []],
  ['src/cli/generate-data.ts', 'usage: npm run generate-data -- --studies N', []],
  ['src/cli/load.ts', 'usage: load [--no-validate] FILE...', ['NOTHING is written', '--no-validate']],
];

describe('--help', () => {
  it.each(TOOLS)('%s prints the usage and exits 0, touching no store', async (tool, first, says) => {
    const result = await run([tool, '--help']);
    expect(result.code, `${tool}: ${result.stderr}`).toBe(0);
    expect(result.stdout.startsWith(first), `${tool}: ${result.stdout}`).toBe(true);
    expect(result.stdout).toContain('-h, --help');
    for (const words of says) expect(result.stdout).toContain(words);
    expect(fs.existsSync(path.join(dir, 'never'))).toBe(false);
  });

  it("create-admin's usage names the site its administrators belong to", async () => {
    const result = await run(['src/cli/create-admin.ts', '--help']);
    expect(result.stdout).toContain('(an administrator of the site nmdc-runtime-useradmin)');
  });

  it('check-index refuses an unknown collection with the usage and exit status 2', async () => {
    const result = await run(['src/cli/check-index.ts', 'sample_set']);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/^unknown collection: sample_set\ncollections: biosample_set, /);
    expect(result.stderr).toContain('usage: npm run check-index');
  });

  it('reindex refuses an unknown option with the usage and exit status 2', async () => {
    const result = await run(['src/cli/reindex.ts', '--all']);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/^unknown option: --all\nusage: npm run reindex/);
  });
});

describe('generate-data --out', () => {
  it('creates the folder it writes into, and says so', async () => {
    const out = path.join(dir, 'data', 'nested', 'sample.json.gz');
    const result = await run([
      'src/cli/generate-data.ts',
      '--studies',
      '1',
      '--biosamples',
      '2',
      '--data-objects',
      '0',
      '--out',
      out,
    ]);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stderr).toContain(`created folder ${path.relative(ROOT, path.dirname(out))}\n`);
    expect(result.stderr).toMatch(/wrote .*sample\.json\.gz: study_set=1 biosample_set=2/);
    expect(fs.statSync(out).size).toBeGreaterThan(100);
  });
});

describe('generate-data to stdout', () => {
  it('stops quietly, exit status 0, when its reader closes the pipe (generate-data | head)', async () => {
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', 'src/cli/generate-data.ts', '--biosamples', '20000'],
      {
        cwd: ROOT,
        env: { ...process.env, LOG_LEVEL: 'silent' },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    // Read the first bytes, then close the pipe as `head -c` does.
    const first = await new Promise<string>((resolve) =>
      child.stdout.once('data', (d: Buffer) => {
        child.stdout.destroy();
        resolve(d.toString());
      }),
    );
    const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
    expect(first).toMatch(/^\{\n"study_set": \[/);
    expect(code).toBe(0);
    expect(stderr).not.toContain('EPIPE');
  });
});
