/**
 * The store's files are its owner's only: a store an older version left readable by others is
 * tightened when it is opened, and a DATA_DIR made readable by hand is reported.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { isOpenToOthers, preparePrivateDatabaseFile } from '../../src/store/private-files.ts';
import { openDatabase } from '../../src/store/sqlite/records.ts';

const modeOf = (file: string) => fs.statSync(file).mode & 0o777;

describe('private store files', () => {
  const dirs: string[] = [];
  const tempDir = () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'nmdc-private-'));
    dirs.push(dir);
    return dir;
  };
  afterEach(() => {
    for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
  });

  it('makes an existing database file and its companions 0600 when an older version left them 0644', () => {
    const dir = tempDir();
    const file = path.join(dir, 'nmdc.sqlite');
    for (const f of [file, `${file}-wal`, `${file}-shm`]) {
      fs.writeFileSync(f, '');
      fs.chmodSync(f, 0o644);
    }
    preparePrivateDatabaseFile(file);
    expect([file, `${file}-wal`, `${file}-shm`].map(modeOf)).toEqual([0o600, 0o600, 0o600]);
  });

  it('creates a missing DATA_DIR 0700 and the database 0600, and leaves no companion readable by others', () => {
    const dir = path.join(tempDir(), 'nested', 'data');
    const file = path.join(dir, 'nmdc.sqlite');
    const db = openDatabase(file);
    try {
      db.exec('CREATE TABLE probe (x); INSERT INTO probe VALUES (1)');
      // The write-ahead log and its index exist while the connection is open.
      expect(fs.readdirSync(dir).sort()).toEqual(['nmdc.sqlite', 'nmdc.sqlite-shm', 'nmdc.sqlite-wal']);
      for (const f of fs.readdirSync(dir)) expect(modeOf(path.join(dir, f)), f).toBe(0o600);
    } finally {
      db.close();
    }
    expect(modeOf(dir)).toBe(0o700);
    expect(modeOf(path.dirname(dir))).toBe(0o700);
  });

  it('reports a DATA_DIR other users may enter or read, and not an owner-only one', () => {
    const dir = tempDir();
    fs.chmodSync(dir, 0o755);
    expect(isOpenToOthers(dir)).toBe(true);
    fs.chmodSync(dir, 0o700);
    expect(isOpenToOthers(dir)).toBe(false);
    expect(isOpenToOthers(path.join(dir, 'missing'))).toBe(false);
  });
});
