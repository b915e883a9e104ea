/**
 * Minting from several processes at once never hands out one id twice: the store's
 * insert-if-absent decides between processes. Here two processes mint from a deliberately tiny
 * blade space on one store file, so that they collide all the time; minting through HTTP on a
 * WORKERS=2 server is in cluster.test.ts, which shares one such server among its tests.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { SqliteDocumentStore } from '../../src/store/sqlite/index.ts';
import { PIDS } from '../../src/pids/index.ts';
import { ROOT } from './process-faults.ts';

/** A process that mints `count` biosample ids one at a time from blades 0..space-1, after `go` exists. */
const MINTING_PROCESS = `
const { SqliteDocumentStore } = await import(process.env.ROOT + '/src/store/sqlite/index.ts');
const { Minter } = await import(process.env.ROOT + '/src/pids/index.ts');
const { bladeOf } = await import(process.env.ROOT + '/src/pids/blade.ts');
const fs = await import('node:fs');
const store = new SqliteDocumentStore({ file: process.env.STORE_FILE });
const space = Number(process.env.SPACE);
const drawn = [];
const blades = () => { const b = bladeOf(Math.floor(Math.random() * space)); drawn.push(b); return b; };
const minter = new Minter(store, { blades, attemptsPerId: 100000 });
process.stdout.write('ready\\n');
while (!fs.existsSync(process.env.GO)) await new Promise((r) => setTimeout(r, 2));
const ids = [];
for (let i = 0; i < Number(process.env.COUNT); i++) ids.push(...(await minter.mint({ siteId: process.env.SITE, clientId: 'c' }, 'nmdc:Biosample', 1)));
await store.close();
process.stdout.write(JSON.stringify({ ids, drawn }) + '\\n');
`;

interface MintingRun {
  ready: Promise<void>;
  done: Promise<{ ids: string[]; drawn: string[] }>;
}

function mintingProcess(env: Record<string, string>): MintingRun {
  const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', MINTING_PROCESS], {
    cwd: ROOT,
    env: { ...process.env, ROOT, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  let markReady: () => void;
  const ready = new Promise<void>((r) => (markReady = r));
  child.stdout.on('data', (d) => {
    out += String(d);
    if (out.startsWith('ready\n')) markReady();
  });
  child.stderr.on('data', (d) => (err += String(d)));
  const done = new Promise<{ ids: string[]; drawn: string[] }>((resolve, reject) =>
    child.once('exit', (code) => {
      if (code !== 0) reject(new Error(`minting process exited ${code}: ${err}`));
      else resolve(JSON.parse(out.slice('ready\n'.length)));
    }),
  );
  return { ready, done };
}

describe('two processes minting on one store file from a tiny blade space', () => {
  it('never both take a blade: every id is minted once and stored once, by the process that answered it', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pids-processes-'));
    try {
      const file = path.join(dir, 'nmdc.sqlite');
      // Create the store file (tables and all) once, before the two processes open it.
      await new SqliteDocumentStore({ file }).close();
      const go = path.join(dir, 'go');
      // 2 x 700 ids out of 2000 blades: most late draws hit a blade one of the two already holds.
      const common = { STORE_FILE: file, GO: go, SPACE: '2000', COUNT: '700' };
      const runs = [
        mintingProcess({ ...common, SITE: 'lab-a' }),
        mintingProcess({ ...common, SITE: 'lab-b' }),
      ];
      await Promise.all(runs.map((r) => r.ready));
      fs.writeFileSync(go, '');
      const [a, b] = await Promise.all(runs.map((r) => r.done));

      expect(a!.ids).toHaveLength(700);
      expect(b!.ids).toHaveLength(700);
      const all = [...a!.ids, ...b!.ids];
      expect(new Set(all).size).toBe(1400);
      // Blades one process drew while the other held them were refused across processes. Which of
      // the two meets the other's blades depends on how their runs interleave (one may finish its
      // first draws before the other starts), but with 1,400 of 2,000 blades taken some draw must.
      const bladesOf = (ids: string[]) => new Set(ids.map((id) => id.split('-')[2]));
      const heldByB = bladesOf(b!.ids);
      const heldByA = bladesOf(a!.ids);
      const refusedAcross =
        a!.drawn.filter((blade) => heldByB.has(blade)).length +
        b!.drawn.filter((blade) => heldByA.has(blade)).length;
      expect(refusedAcross).toBeGreaterThan(0);

      const store = new SqliteDocumentStore({ file });
      try {
        expect(await store.count(PIDS, {})).toBe(1400);
        for (const [site, ids] of [
          ['lab-a', a!.ids],
          ['lab-b', b!.ids],
        ] as const) {
          const records = await store.find(PIDS, { id: { $in: ids } });
          expect(records).toHaveLength(700);
          for (const record of records) expect(record.site_id).toBe(site);
        }
      } finally {
        await store.close();
      }
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);
});
