/**
 * The SDK as a package: `npm run sdk:pack`'s tarball installed (offline, it has no dependencies)
 * into a scratch project outside the repository, used from plain `node` against a running service
 * (login, a paged find, a provenance walk, an export), and type-checked with `tsc` as a
 * TypeScript consumer would compile it; a wrong call does not compile.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import request from 'supertest';
import { buildSdk, packSdk, sdkFolders } from '../../scripts/sdk-package.ts';
import { prepareData } from '../../src/startup.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');
const TSC = path.join(ROOT, 'node_modules/typescript/bin/tsc');
const ADMIN = { username: 'sdk-consumer', password: 'walnut harbour signal prism' };
const run = promisify(execFile);

let server: TestServer;
let project: string;
let tarball: string;

/** Runs a command in the scratch project; answers its exit code and output. */
async function inProject(file: string, args: string[], env: Record<string, string> = {}) {
  try {
    const { stdout, stderr } = await run(file, args, {
      cwd: project,
      env: { ...process.env, ...env },
      timeout: 90_000,
    });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

beforeAll(async () => {
  project = fs.mkdtempSync(path.join(os.tmpdir(), 'nmdc-sdk-consumer-'));
  const [packed, started] = await Promise.all([
    Promise.resolve().then(() =>
      packSdk(path.join(ROOT, 'generated/sdk-2.13.0'), path.join(project, 'tarballs')),
    ),
    startTestServer({ ADMIN_USERNAME: ADMIN.username, ADMIN_PASSWORD: ADMIN.password }),
  ]);
  tarball = packed;
  server = started;
  await prepareData({ ...server, config: { ...server.config, demoData: true } });
  fs.writeFileSync(
    path.join(project, 'package.json'),
    JSON.stringify({ name: 'sdk-consumer', private: true, type: 'module' }, null, 2),
  );
  const install = await inProject('npm', ['install', '--offline', '--no-audit', '--no-fund', tarball]);
  expect(install.code, install.stderr).toBe(0);
}, 120_000);

afterAll(async () => {
  await server?.close();
  if (project) fs.rmSync(project, { recursive: true, force: true });
});

const CONSUMER = `import { createNmdcClient } from '@nmdc-service/sdk-2.13.0';

const nmdc = createNmdcClient({ baseUrl: process.env.BASE_URL });
const login = await nmdc.login({
  body: { grant_type: 'password', username: process.env.NMDC_USERNAME, password: process.env.NMDC_PASSWORD },
});
if (login.error) throw new Error(JSON.stringify(login.error));
nmdc.setToken(login.data.access_token);
const me = await nmdc.getCurrentUser();

const study = (await nmdc.findStudies({ query: { per_page: 1 } })).data.results[0];
const biosamples = [];
for await (const biosample of nmdc.paginate('findBiosamples', {
  query: { filter: \`associated_studies:\${study.id}\`, per_page: 5 },
}))
  biosamples.push(biosample.id);

const linked = await nmdc.getLinkedInstances({
  query: { ids: [biosamples[0]], types: ['nmdc:DataObject'], max_page_size: 1000 },
});
const exported = [];
for await (const record of nmdc.exportRecords('study_set', { projection: 'name' })) exported.push(record);

console.log(JSON.stringify({ user: me.data.username, study: study.id, biosamples, linked: linked.data, exported }));
`;

describe('the packed SDK', () => {
  it('is ESM JavaScript with declarations, an exports map and a version', () => {
    const manifest = JSON.parse(
      fs.readFileSync(path.join(project, 'node_modules/@nmdc-service/sdk-2.13.0/package.json'), 'utf8'),
    );
    expect(manifest).toMatchObject({
      name: '@nmdc-service/sdk-2.13.0',
      version: '2.13.0',
      type: 'module',
      types: './dist/index.d.ts',
      exports: { '.': { types: './dist/index.d.ts', import: './dist/index.js' } },
      files: ['dist', 'README.md'],
    });
    expect(manifest).not.toHaveProperty('private');
    expect(manifest).not.toHaveProperty('dependencies');
    const dist = path.join(project, 'node_modules/@nmdc-service/sdk-2.13.0/dist');
    expect(fs.existsSync(path.join(dist, 'index.js'))).toBe(true);
    expect(fs.readFileSync(path.join(dist, 'index.d.ts'), 'utf8')).toContain("from './api/index.js'");
    expect(path.basename(tarball)).toBe('nmdc-service-sdk-2.13.0-2.13.0.tgz');
  });

  it('runs with plain node: login, a paged find, a provenance walk and an export', async () => {
    fs.writeFileSync(path.join(project, 'consumer.mjs'), CONSUMER);
    const result = await inProject(process.execPath, ['consumer.mjs'], {
      BASE_URL: server.url,
      NMDC_USERNAME: ADMIN.username,
      NMDC_PASSWORD: ADMIN.password,
    });
    expect(result.code, result.stderr).toBe(0);
    const out = JSON.parse(result.stdout);
    expect(out.user).toBe(ADMIN.username);
    // The same answers as the API gives directly.
    const studies = (await request(server.app).get('/studies?per_page=1').expect(200)).body.results;
    expect(out.study).toBe(studies[0].id);
    const all = await server.store.find('biosample_set', { associated_studies: out.study });
    expect(out.biosamples).toEqual(all.map((b) => b.id).sort());
    expect(out.biosamples.length).toBeGreaterThan(5); // more than one page of 5
    const linked = await request(server.app)
      .get('/nmdcschema/linked_instances')
      .query({ ids: out.biosamples[0], types: 'nmdc:DataObject', max_page_size: 1000 })
      .expect(200);
    expect(out.linked).toEqual(linked.body);
    expect(out.linked.resources.length).toBeGreaterThan(0);
    const storedStudies = await server.store.find('study_set', {});
    expect(out.exported).toEqual(storedStudies.map((s) => ({ id: s.id, name: s.name })));
  });

  it('does not export its internals', async () => {
    fs.writeFileSync(path.join(project, 'deep.mjs'), "import '@nmdc-service/sdk-2.13.0/dist/paging.js';\n");
    const result = await inProject(process.execPath, ['deep.mjs']);
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain('ERR_PACKAGE_PATH_NOT_EXPORTED');
  });

  /** A strict TypeScript project of `file`; `checkDeclarations` checks the SDK's .d.ts files too. */
  const compile = async (file: string, text: string, checkDeclarations: boolean) => {
    fs.writeFileSync(path.join(project, file), text);
    fs.writeFileSync(
      path.join(project, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          target: 'ES2022',
          module: 'NodeNext',
          moduleResolution: 'NodeNext',
          lib: ['ES2022', 'DOM', 'DOM.Iterable', 'DOM.AsyncIterable'],
          types: [],
          strict: true,
          noEmit: true,
          skipLibCheck: !checkDeclarations,
        },
        files: [file],
      }),
    );
    return inProject(process.execPath, [TSC, '-p', 'tsconfig.json']);
  };

  it('type-checks a TypeScript consumer with tsc, its declarations included', async () => {
    const result = await compile(
      'consumer.ts',
      `import { createNmdcClient, type NmdcClient } from '@nmdc-service/sdk-2.13.0';

const nmdc: NmdcClient = createNmdcClient({ baseUrl: 'http://localhost:8080' });
export async function plantNames(): Promise<string[]> {
  const { data } = await nmdc.findBiosamples({ query: { filter: 'ecosystem_category:Plants', per_page: 10 } });
  const names: string[] = (data?.results ?? []).map((b) => b.id);
  for await (const biosample of nmdc.paginate('findBiosamples', { query: { filter: 'ecosystem_category:Plants' } }))
    names.push(biosample.id);
  for await (const record of nmdc.exportRecords('biosample_set')) names.push(String(record.id));
  return names;
}
`,
      true,
    );
    expect(result.code, result.stdout + result.stderr).toBe(0);
  }, 60_000);

  it('refuses to compile a call the API does not take', async () => {
    const result = await compile(
      'wrong.ts',
      `import { createNmdcClient } from '@nmdc-service/sdk-2.13.0';

const nmdc = createNmdcClient({ baseUrl: 'http://localhost:8080' });
await nmdc.findBiosamples({ query: { per_page: 'ten' } });
`,
      false,
    );
    expect(result.code).not.toBe(0);
    expect(result.stdout).toMatch(
      /wrong\.ts\(4,\d+\): error TS2322: Type 'string' is not assignable to type 'number'/,
    );
  }, 60_000);

  it('builds every API version to JavaScript that plain node imports', async () => {
    const folders = sdkFolders();
    expect(folders.map((f) => path.basename(f))).toEqual(['sdk-1.2.0', 'sdk-2.13.0']);
    // 2.13.0 was built by the pack above; the older API's package is built the same way.
    const out = path.join(project, 'sdk-1.2.0-dist');
    buildSdk(path.join(ROOT, 'generated/sdk-1.2.0'), out);
    fs.writeFileSync(path.join(out, 'package.json'), '{"type": "module"}');
    const result = await inProject(process.execPath, [
      '--input-type=module',
      '-e',
      `const sdk = await import(${JSON.stringify(path.join(out, 'index.js'))});
const nmdc = sdk.createNmdcClient({ baseUrl: ${JSON.stringify(server.url)} });
const { data } = await nmdc.findBiosamples({ query: { per_page: 2 } });
console.log(JSON.stringify(data.results.map((b) => b.id)));`,
    ]);
    expect(result.code, result.stderr).toBe(0);
    const firstTwo = (await request(server.app).get('/biosamples?per_page=2').expect(200)).body.results;
    expect(JSON.parse(result.stdout)).toEqual(firstTwo.map((b: { id: string }) => b.id));
    expect(fs.existsSync(path.join(out, 'index.d.ts'))).toBe(true);
  }, 60_000);
});
