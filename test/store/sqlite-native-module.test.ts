/**
 * The better-sqlite3 native module as built on this machine. Its 12.x line wraps statements in
 * `node::ObjectWrap`; compiled against Node 24.19+ headers, that class removes an environment
 * cleanup hook in its destructor, and Node aborts the whole process ("Assertion failed: (env) !=
 * nullptr" in RemoveEnvironmentCleanupHook) when the garbage collector frees a statement. Every
 * server, CLI and test worker then dies at a random point; this test names the cause instead.
 */
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';

const ROOT = path.resolve(import.meta.dirname, '../..');

// Many short-lived statements interleaved with allocation, so that collections run and free them.
const DROP_STATEMENTS = `
const Database = require('better-sqlite3');
const db = new Database(':memory:');
db.exec('CREATE TABLE t (a)');
(async () => {
  for (let round = 0; round < 40; round++) {
    await new Promise((resolve) => setImmediate(resolve));
    for (let i = 0; i < 2000; i++) db.prepare('SELECT a FROM t WHERE a = ?').get(i);
    const garbage = [];
    for (let i = 0; i < 20000; i++) garbage.push({ i });
  }
  db.close();
  console.log('statements freed');
})();
`;

describe('the better-sqlite3 native module', () => {
  it('lets the garbage collector free thousands of prepared statements without aborting the process', () => {
    const child = spawnSync(process.execPath, ['-e', DROP_STATEMENTS], {
      cwd: ROOT,
      encoding: 'utf8',
      timeout: 60_000,
    });
    const hint =
      'better-sqlite3 was built against Node headers whose node::ObjectWrap registers cleanup hooks ' +
      '(24.19+): rebuild it against 24.18.1 headers, see README "Node.js versions"';
    expect(child.stderr, hint).not.toMatch(/RemoveEnvironmentCleanupHook|Assertion failed/);
    expect({ status: child.status, signal: child.signal }, hint).toEqual({ status: 0, signal: null });
    expect(child.stdout).toContain('statements freed');
  }, 60_000);
});
