/**
 * The generated SDKs as npm packages. `npm run sdk:pack` compiles each `generated/sdk-<version>`
 * (TypeScript, as `npm run generate` writes it and `npm run generate:check` keeps in step with
 * openapi.yaml) to ESM JavaScript with `.d.ts` declarations, in a temporary copy of the folder (so
 * nothing built is ever committed or left in generated/), and packs it with `npm pack` into
 * `artifacts/`, e.g. `artifacts/nmdc-service-sdk-2.13.0-2.13.0.tgz`, which any project installs
 * with `npm install <tarball>`: the packages have no dependencies, and run on Node.js 20.19+ and in
 * browsers (the global `fetch`).
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/** The folders of the generated SDKs. */
export function sdkFolders(generatedDir = path.join(root, 'generated')): string[] {
  return fs
    .readdirSync(generatedDir, { withFileTypes: true })
    .filter((entry) => entry.isDirectory() && entry.name.startsWith('sdk-'))
    .map((entry) => path.join(generatedDir, entry.name))
    .sort();
}

function sources(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory())
      return entry.name === 'dist' || entry.name === 'node_modules' ? [] : sources(full);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts') ? [full] : [];
  });
}

/**
 * Compiles the SDK sources of `dir` into `outDir` (ESM JavaScript and declarations); throws with
 * the compiler's messages when they do not compile.
 */
export function buildSdk(dir: string, outDir: string): void {
  fs.rmSync(outDir, { recursive: true, force: true });
  const options: ts.CompilerOptions = {
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    lib: ['lib.es2022.d.ts', 'lib.dom.d.ts', 'lib.dom.iterable.d.ts', 'lib.dom.asynciterable.d.ts'],
    types: [],
    strict: true,
    declaration: true,
    // The sources import each other with their `.ts` names (as the service does); the output says `.js`.
    allowImportingTsExtensions: true,
    rewriteRelativeImportExtensions: true,
    rootDir: dir,
    outDir,
    skipLibCheck: true,
    newLine: ts.NewLineKind.LineFeed,
  };
  const program = ts.createProgram(sources(dir), options);
  const emitted = program.emit();
  const problems = [...ts.getPreEmitDiagnostics(program), ...emitted.diagnostics].filter(
    (d) => d.category === ts.DiagnosticCategory.Error,
  );
  if (problems.length > 0) {
    const host: ts.FormatDiagnosticsHost = {
      getCanonicalFileName: (f) => f,
      getCurrentDirectory: () => dir,
      getNewLine: () => '\n',
    };
    throw new Error(`${path.relative(root, dir)} does not compile:\n${ts.formatDiagnostics(problems, host)}`);
  }
  // The compiler rewrites `.ts` to `.js` in the JavaScript it emits, not in declarations.
  for (const file of declarations(outDir)) {
    const text = fs.readFileSync(file, 'utf8');
    fs.writeFileSync(file, text.replace(/(['"])(\.{1,2}\/[^'"]*?)\.ts\1/g, '$1$2.js$1'));
  }
}

function declarations(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return declarations(full);
    return entry.name.endsWith('.d.ts') ? [full] : [];
  });
}

/** Builds one SDK in a temporary copy of its folder and packs it into `destination`; answers the tarball's path. */
export function packSdk(dir: string, destination: string): string {
  const stage = fs.mkdtempSync(path.join(os.tmpdir(), 'nmdc-sdk-pack-'));
  try {
    fs.cpSync(dir, stage, {
      recursive: true,
      filter: (source) => !/[\\/](dist|node_modules)$/.test(source),
    });
    buildSdk(stage, path.join(stage, 'dist'));
    fs.mkdirSync(destination, { recursive: true });
    const out = execFileSync('npm', ['pack', '--json', '--pack-destination', path.resolve(destination)], {
      cwd: stage,
      encoding: 'utf8',
      // Quiet unless it fails (the error then carries npm's messages).
      stdio: ['ignore', 'pipe', 'pipe'],
      env: {
        ...process.env,
        npm_config_audit: 'false',
        npm_config_fund: 'false',
        npm_config_loglevel: 'error',
      },
    });
    const [packed] = JSON.parse(out) as Array<{ filename: string }>;
    return path.join(path.resolve(destination), packed!.filename);
  } finally {
    fs.rmSync(stage, { recursive: true, force: true });
  }
}

function main(): void {
  for (const dir of sdkFolders()) {
    const tarball = packSdk(dir, path.join(process.cwd(), 'artifacts'));
    console.log(`${path.relative(root, dir)}: ${path.relative(process.cwd(), tarball)}`);
  }
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  try {
    main();
  } catch (err) {
    console.error(err instanceof Error ? err.message : String(err));
    process.exit(1);
  }
}
