/**
 * Reading the project's import graph, for the tests that keep one layer from depending on another.
 */
import fs from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

export const ROOT = path.resolve(import.meta.dirname, '../..');

/** TypeScript and JavaScript module files under `dir`, recursively. */
export const sourceFiles = (dir: string): string[] =>
  fs
    .readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter((f) => /\.(tsx?|mts|mjs)$/.test(f))
    .map((f) => path.join(dir, f));

/** Project files a file imports: static, `export ... from`, `import type` and dynamic `import()`. */
export function importsOf(file: string): string[] {
  const { importedFiles } = ts.preProcessFile(fs.readFileSync(file, 'utf8'), true, true);
  return importedFiles
    .map((imported) => imported.fileName)
    .filter((specifier) => specifier.startsWith('.'))
    .map((specifier) => path.resolve(path.dirname(file), specifier))
    .map((target) =>
      fs.existsSync(target) && fs.statSync(target).isDirectory() ? path.join(target, 'index.ts') : target,
    );
}

export const relative = (file: string) => path.relative(ROOT, file);
