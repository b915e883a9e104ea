/**
 * `npm run generate`: writes everything derived from the contract into `generated/`:
 * the 2.13.0 and 1.2.0 documents as JSON, and for each version a typed SDK (types, operation
 * functions and the bundled fetch client from @hey-api/openapi-ts, plus the hand-written entry
 * point from scripts/sdk-template/).
 *
 * `npm run generate:check` regenerates into a temporary folder and exits 1 when `generated/`
 * differs, so CI fails when someone edits openapi.yaml without regenerating.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createClient } from '@hey-api/openapi-ts';
import { loadApiDocuments, type OpenApiDocument } from '../src/http/openapi-documents.ts';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const outputDir = path.join(root, 'generated');
const templateDir = path.join(root, 'scripts', 'sdk-template');

async function generateSdk(doc: OpenApiDocument, dir: string): Promise<void> {
  const version = doc.info.version;
  await createClient({
    // A copy: the generator may annotate the document it reads.
    input: structuredClone(doc) as any,
    output: {
      path: path.join(dir, 'api'),
      // The project imports local files with their `.ts` extension (NodeNext + allowImportingTsExtensions).
      module: { extension: '.ts' },
      tsConfigPath: null,
      clean: true,
    },
    plugins: ['@hey-api/client-fetch', '@hey-api/typescript', '@hey-api/sdk'],
    logs: { level: 'silent', file: false },
  });
  fs.copyFileSync(path.join(templateDir, 'index.ts.tmpl'), path.join(dir, 'index.ts'));
  const manifest = {
    name: `@nmdc-service/sdk-${version}`,
    version,
    description: `Typed client for version ${version} of the NMDC metadata service API (generated; do not edit)`,
    private: true,
    type: 'module',
    exports: { '.': './index.ts' },
    types: './index.ts',
  };
  fs.writeFileSync(path.join(dir, 'package.json'), `${JSON.stringify(manifest, null, 2)}\n`);
}

/** Generates the whole `generated/` tree into `dir`. */
export async function generateInto(dir: string): Promise<void> {
  const { current, legacy } = loadApiDocuments();
  fs.mkdirSync(dir, { recursive: true });
  for (const doc of [current, legacy]) {
    const version = doc.info.version;
    fs.writeFileSync(path.join(dir, `openapi-${version}.json`), `${JSON.stringify(doc, null, 2)}\n`);
    await generateSdk(doc, path.join(dir, `sdk-${version}`));
  }
}

function listFiles(dir: string, base = dir): string[] {
  if (!fs.existsSync(dir)) return [];
  return fs
    .readdirSync(dir, { withFileTypes: true })
    .flatMap((entry) => {
      const full = path.join(dir, entry.name);
      return entry.isDirectory() ? listFiles(full, base) : [path.relative(base, full)];
    })
    .sort();
}

/** Files that differ between two trees: missing on one side, or with other bytes. */
export function differingFiles(expectedDir: string, actualDir: string): string[] {
  const expected = listFiles(expectedDir);
  const actual = listFiles(actualDir);
  const all = [...new Set([...expected, ...actual])].sort();
  return all.filter((file) => {
    const a = path.join(expectedDir, file);
    const b = path.join(actualDir, file);
    if (!fs.existsSync(a) || !fs.existsSync(b)) return true;
    return !fs.readFileSync(a).equals(fs.readFileSync(b));
  });
}

async function main(): Promise<number> {
  const check = process.argv.includes('--check');
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'nmdc-generate-'));
  try {
    const fresh = path.join(tmp, 'generated');
    await generateInto(fresh);
    const changed = differingFiles(fresh, outputDir);
    if (check) {
      if (changed.length === 0) {
        console.log(`generated/ is up to date (${listFiles(fresh).length} files)`);
        return 0;
      }
      console.error(
        `generated/ is out of date with openapi.yaml: ${changed.length} file(s) differ:\n` +
          changed.map((f) => `  generated/${f}`).join('\n') +
          '\nRun `npm run generate` and commit the result.',
      );
      return 1;
    }
    fs.rmSync(outputDir, { recursive: true, force: true });
    fs.cpSync(fresh, outputDir, { recursive: true });
    console.log(`generated/: ${listFiles(outputDir).length} files written, ${changed.length} changed`);
    return 0;
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main().then(
    (code) => process.exit(code),
    (err) => {
      console.error(err);
      process.exit(1);
    },
  );
}
