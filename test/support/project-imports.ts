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

/**
 * Import chains from any of `starts` to a file for which `isTarget` holds, found breadth-first over
 * project imports, each written `a -> b -> c` relative to the project root. Empty when none exists.
 */
export function chainsInto(starts: string[], isTarget: (file: string) => boolean): string[] {
  const reachedFrom = new Map<string, string | null>(starts.map((f) => [f, null]));
  const queue = [...reachedFrom.keys()];
  while (queue.length) {
    const file = queue.shift()!;
    if (!fs.existsSync(file)) continue;
    for (const target of importsOf(file)) {
      if (reachedFrom.has(target)) continue;
      reachedFrom.set(target, file);
      queue.push(target);
    }
  }
  return [...reachedFrom.keys()].filter(isTarget).map((file) => {
    const chain = [file];
    for (let from = reachedFrom.get(file); from; from = reachedFrom.get(from)) chain.unshift(from);
    return chain.map(relative).join(' -> ');
  });
}
