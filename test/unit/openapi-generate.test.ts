import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { differingFiles, generateInto } from '../../scripts/generate.ts';

const committed = path.resolve(import.meta.dirname, '../../generated');
let tmp: string;
let first: string;
let second: string;

beforeAll(async () => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'nmdc-generate-test-'));
  first = path.join(tmp, 'first');
  second = path.join(tmp, 'second');
  await generateInto(first);
  await generateInto(second);
}, 120_000);
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

describe('generation from the contract', () => {
  it('is byte-identical from one run to the next', () => {
    expect(differingFiles(first, second)).toEqual([]);
  });

  it('matches the committed generated/ folder', () => {
    expect(differingFiles(first, committed)).toEqual([]);
  });

  it('writes both documents and an SDK package per version with the template entry point', () => {
    for (const version of ['2.13.0', '1.2.0']) {
      const doc = JSON.parse(fs.readFileSync(path.join(first, `openapi-${version}.json`), 'utf8'));
      expect(doc.info.version).toBe(version);
      const manifest = JSON.parse(
        fs.readFileSync(path.join(first, `sdk-${version}`, 'package.json'), 'utf8'),
      );
      // A package that builds to JavaScript with declarations (npm run sdk:pack).
      expect(manifest).toMatchObject({
        name: `@nmdc-service/sdk-${version}`,
        version,
        exports: { '.': { types: './dist/index.d.ts', import: './dist/index.js' } },
        files: ['dist', 'README.md'],
      });
      const entry = fs.readFileSync(path.join(first, `sdk-${version}`, 'index.ts'), 'utf8');
      expect(entry).toBe(
        fs.readFileSync(
          path.resolve(import.meta.dirname, '../../scripts/sdk-template/index.ts.tmpl'),
          'utf8',
        ),
      );
      expect(fs.existsSync(path.join(first, `sdk-${version}`, 'api', 'client', 'client.gen.ts'))).toBe(true);
    }
    const legacySdk = fs.readFileSync(path.join(first, 'sdk-1.2.0', 'api', 'sdk.gen.ts'), 'utf8');
    expect(legacySdk).toContain("url: '/activities/{activity_id}'");
    expect(legacySdk).not.toContain('/planned_processes');
  });

  it('reports changed, missing and extra files when generated/ drifts', () => {
    const drifted = path.join(tmp, 'drifted');
    fs.cpSync(first, drifted, { recursive: true });
    fs.appendFileSync(path.join(drifted, 'openapi-2.13.0.json'), ' ');
    fs.rmSync(path.join(drifted, 'sdk-1.2.0', 'package.json'));
    fs.writeFileSync(path.join(drifted, 'sdk-2.13.0', 'stale.ts'), '');
    expect(differingFiles(first, drifted)).toEqual([
      'openapi-2.13.0.json',
      'sdk-1.2.0/package.json',
      'sdk-2.13.0/stale.ts',
    ]);
  });
});
