/**
 * `src/auth` builds on `src/accounts`, never the reverse: no file under src/accounts imports
 * from src/auth, directly or through other modules of the project (type-only imports included,
 * since they tie the modules together just the same for readers and tools).
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { importsOf, relative, ROOT, sourceFiles } from '../support/project-imports.ts';

const ACCOUNTS = path.join(ROOT, 'src/accounts');
const AUTH = path.join(ROOT, 'src/auth');

const insideAuth = (file: string) => file.startsWith(AUTH + path.sep);

describe('src/accounts does not depend on src/auth', () => {
  it('has no file under src/accounts that imports from src/auth', () => {
    const offending = sourceFiles(ACCOUNTS).flatMap((file) =>
      importsOf(file)
        .filter(insideAuth)
        .map((target) => `${relative(file)} -> ${relative(target)}`),
    );
    expect(offending).toEqual([]);
  });

  it('reaches no file under src/auth through other modules either', () => {
    // Breadth-first over project imports from every accounts file, remembering how each was reached.
    const reachedFrom = new Map<string, string | null>(sourceFiles(ACCOUNTS).map((f) => [f, null]));
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
    const chains = [...reachedFrom.keys()].filter(insideAuth).map((file) => {
      const chain = [file];
      for (let from = reachedFrom.get(file); from; from = reachedFrom.get(from)) chain.unshift(from);
      return chain.map(relative).join(' -> ');
    });
    expect(chains).toEqual([]);
  });

  it('reads the import specifiers it checks (a self-test on a file known to import accounts)', () => {
    expect(importsOf(path.join(AUTH, 'index.ts')).map(relative)).toContain('src/accounts/index.ts');
  });
});
