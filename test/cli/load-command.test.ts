import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { generateDatabase, plannedCounts } from '../../src/data/generator.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');
/** A tool runs in one Node process (`node_modules/.bin/tsx` would start a second one to run it). */
const NODE_TSX = ['--import', 'tsx'];

function run(args: string[], env: Record<string, string>) {
  return spawnSync(process.execPath, [...NODE_TSX, ...args], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    encoding: 'utf8',
    timeout: 120_000,
  });
}

function countsIn(file: string): Record<string, number> {
  const db = new Database(file, { readonly: true });
  try {
    const rows = db.prepare('SELECT collection, count(*) AS n FROM docs GROUP BY collection').all() as Array<{
      collection: string;
      n: number;
    }>;
    return Object.fromEntries(rows.map((r) => [r.collection, r.n]));
  } finally {
    db.close();
  }
}

describe('generate-data and load commands', () => {
  let dir: string;
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'nmdc-cli-'));
  });
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  // Three command processes (each loads the service's modules): 12 s on a slow 2-core machine.
  it('generates a gzipped file, loads it with a per-collection summary, and loading it again changes nothing', () => {
    const file = path.join(dir, 'small.json.gz');
    const options = { studies: 2, biosamples: 30, dataObjects: 90 };
    const gen = run(
      [
        'src/cli/generate-data.ts',
        '--studies',
        '2',
        '--biosamples',
        '30',
        '--data-objects',
        '90',
        '--out',
        file,
      ],
      {},
    );
    expect(gen.status, gen.stderr).toBe(0);
    expect(gen.stderr).toMatch(/wrote .*small\.json\.gz: study_set=2 biosample_set=30/);

    const env = { DATA_DIR: path.join(dir, 'data'), LOG_LEVEL: 'silent' };
    const first = run(['src/cli/load.ts', file], env);
    expect(first.status, first.stderr).toBe(0);
    const total = Object.values(plannedCounts(options)).reduce((a, b) => a + b, 0);
    expect(first.stdout).toMatch(
      new RegExp(`^loaded ${total} records \\(0 rejected\\) in [\\d.]+ s, \\d+ records/s`),
    );
    expect(first.stdout).toContain('  biosample_set: 30\n');
    expect(first.stdout).toContain('  data_object_set: 90\n');

    const second = run(['src/cli/load.ts', file], env);
    expect(second.status, second.stderr).toBe(0);
    expect(second.stderr).toContain(`0 inserted, ${total} updated, 0 rejected`);
    expect(countsIn(path.join(dir, 'data', 'nmdc.sqlite'))).toEqual(plannedCounts(options));
  }, 60_000);

  it('ends with exactly the file records when a load killed mid-run is run again', async () => {
    const file = path.join(dir, 'large.json');
    const options = { studies: 3, biosamples: 3000, dataObjects: 9000 };
    // Written here rather than by generate-data (the test above runs the command).
    fs.writeFileSync(file, JSON.stringify(generateDatabase(options)));
    const dataDir = path.join(dir, 'data');
    const dbFile = path.join(dataDir, 'nmdc.sqlite');
    const env = { ...process.env, DATA_DIR: dataDir, LOG_LEVEL: 'silent' };

    const child = spawn(process.execPath, [...NODE_TSX, 'src/cli/load.ts', file], {
      cwd: ROOT,
      env,
      stdio: 'ignore',
    });
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    // Kill as soon as the first batches are committed, well before the end.
    let partial = 0;
    for (let i = 0; i < 600 && partial === 0; i++) {
      await new Promise((r) => setTimeout(r, 50));
      if (!fs.existsSync(dbFile)) continue;
      try {
        partial = Object.values(countsIn(dbFile)).reduce((a, b) => a + b, 0);
      } catch {
        // the schema may not exist yet
      }
    }
    child.kill('SIGKILL');
    await exited;
    const total = Object.values(plannedCounts(options)).reduce((a, b) => a + b, 0);
    expect(partial).toBeGreaterThan(0);
    const killed = countsIn(dbFile);
    const planned = plannedCounts(options) as Record<string, number>;
    expect(Object.values(killed).reduce((a, b) => a + b, 0)).toBeLessThan(total);
    // Whole batches only: each collection is complete or holds a multiple of the batch size.
    for (const [collection, n] of Object.entries(killed)) {
      expect(n === planned[collection] || n % 1000 === 0, `${collection}: ${n}`).toBe(true);
    }

    const rerun = run(['src/cli/load.ts', file], { DATA_DIR: dataDir, LOG_LEVEL: 'silent' });
    expect(rerun.status, rerun.stderr).toBe(0);
    expect(countsIn(dbFile)).toEqual(plannedCounts(options));
  }, 180_000);

  it('checks the files first and writes nothing when a record fails; --no-validate skips the bad ones', () => {
    const term = (id: string) => ({
      term: { id, type: 'nmdc:OntologyClass' },
      type: 'nmdc:ControlledIdentifiedTermValue',
    });
    const studies = path.join(dir, 'studies.json');
    fs.writeFileSync(
      studies,
      JSON.stringify({
        study_set: [{ id: 'nmdc:sty-11-cli00001', type: 'nmdc:Study', study_category: 'research_study' }],
      }),
    );
    const samples = path.join(dir, 'biosample_set.jsonl');
    const sample = (id: string) => ({
      id,
      type: 'nmdc:Biosample',
      name: `sample ${id}`,
      associated_studies: ['nmdc:sty-11-cli00001'],
      env_broad_scale: term('ENVO:00000446'),
      env_local_scale: term('ENVO:00000114'),
      env_medium: term('ENVO:00001998'),
    });
    const { name: _name, ...nameless } = sample('nmdc:bsm-11-cli00002');
    fs.writeFileSync(
      samples,
      [sample('nmdc:bsm-11-cli00001'), nameless].map((d) => JSON.stringify(d)).join('\n'),
    );
    const dataDir = path.join(dir, 'data');
    const env = { DATA_DIR: dataDir, LOG_LEVEL: 'silent' };

    const checked = run(['src/cli/load.ts', studies, samples], env);
    expect(checked.status).toBe(1);
    expect(checked.stderr).toContain(
      `rejected ${samples} biosample_set[1] (line 2) nmdc:bsm-11-cli00002: 'name' is a required property in /biosample_set/1 (id 'nmdc:bsm-11-cli00002')\n`,
    );
    expect(checked.stderr).toContain('nothing was written: 1 problem(s) in 1 of 3 records');
    expect(
      fs.existsSync(path.join(dataDir, 'nmdc.sqlite')) ? countsIn(path.join(dataDir, 'nmdc.sqlite')) : {},
    ).toEqual({});

    const skipping = run(['src/cli/load.ts', '--no-validate', studies, samples], env);
    expect(skipping.status, skipping.stderr).toBe(0);
    expect(countsIn(path.join(dataDir, 'nmdc.sqlite'))).toEqual({ study_set: 1, biosample_set: 2 });
    // `load --help` says so: test/cli/help.test.ts.
  });

  it('exits with a usage message without files, and a clear error for a missing file or one that is not Database JSON', () => {
    const none = run(['src/cli/load.ts'], { DATA_DIR: path.join(dir, 'data') });
    expect(none.status).toBe(2);
    expect(none.stderr).toContain('usage: load [--no-validate] FILE...');
    const missing = run(['src/cli/load.ts', path.join(dir, 'nope.json')], {
      DATA_DIR: path.join(dir, 'data'),
    });
    expect(missing.status).toBe(1);
    expect(missing.stderr).toContain('no such file');
    // A file that is not Database JSON is no file of zero records: the load stops, naming it.
    const array = path.join(dir, 'array.json');
    fs.writeFileSync(array, JSON.stringify([{ id: 'nmdc:sty-11-a', type: 'nmdc:Study' }]));
    const wrong = run(['src/cli/load.ts', array], { DATA_DIR: path.join(dir, 'data') });
    expect(wrong.status).toBe(1);
    expect(wrong.stderr).toContain(
      `load failed: ${array}: not NMDC Database JSON (line 1): the input must be one JSON object of collections`,
    );
    expect(wrong.stdout).not.toContain('loaded');
  });
});
