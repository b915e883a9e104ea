/**
 * Stored objects on both bytes adapters: files under DATA_DIR beside the embedded store (always),
 * GridFS beside MongoDB (always on the strict stand-in, test/support/mongo-standin.ts, with the
 * driver's own GridFS code; on a server when MONGO_URL is set, each run in a fresh database,
 * dropped after).
 * Bytes are content-addressed, a prepared record is not stored until its caller writes it, and a
 * sweep removes only old bytes no record refers to.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createHash, randomUUID } from 'node:crypto';
import { MongoClient, ObjectId, type Db } from 'mongodb';
import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.ts';
import type { DocumentStore } from '../../src/store/port.ts';
import { SqliteDocumentStore } from '../../src/store/sqlite/index.ts';
import { openMongoStore, storeOnClient } from '../../src/store/mongo/index.ts';
import { StandInServer } from '../support/mongo-standin.ts';
import {
  OBJECTS,
  StoredObjects,
  objectBytesFor,
  objectRecord,
  openStoredObjects,
} from '../../src/objects/stored-objects.ts';
import type { ObjectBytes } from '../../src/objects/object-bytes.ts';

interface Fixture {
  store: DocumentStore;
  bytes: ObjectBytes;
  dataDir: string;
  dispose(): Promise<void>;
}

const sha256 = (b: Buffer) => createHash('sha256').update(b).digest('hex');
/** A cutoff in the future: every stored byte counts as old. */
const EVERYTHING_IS_OLD = -60_000;
const HOUR = 3_600_000;

function describeStoredObjects(name: string, open: () => Promise<Fixture>) {
  describe(`stored objects on ${name}`, () => {
    let f: Fixture;
    let objects: StoredObjects;

    beforeEach(async () => {
      f = await open();
      objects = new StoredObjects(f.store, f.bytes);
    });
    afterEach(async () => f.dispose());

    it('prepares a DRS-like record without storing it, and reads the bytes once the record is written', async () => {
      const content = Buffer.from('{"study_set": []}');
      const object = await objects.prepare({
        content,
        mimeType: 'application/json',
        description: 'JSON metadata in',
        createdBy: 'alice',
      });
      expect(object).toEqual({
        id: expect.stringMatching(/^gfs0[0-9a-z]{12}$/),
        name: object.id,
        size: content.length,
        created_time: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
        mime_type: 'application/json',
        description: 'JSON metadata in',
        checksums: [{ type: 'sha256', checksum: sha256(content) }],
        created_by: 'alice',
      });
      expect(await objects.get(object.id)).toBeNull();
      expect(await objects.read(object.id)).toBeNull();

      await f.store.upsertMany(OBJECTS, [objectRecord(object)]);
      expect(await objects.get(object.id)).toEqual(object);
      expect((await objects.read(object.id))!.toString()).toBe('{"study_set": []}');
    });

    it('keeps the name and types given', async () => {
      const object = await objects.prepare({
        content: Buffer.from('id\taction\n'),
        name: 'sheet.tsv',
        mimeType: 'text/tab-separated-values',
        description: 'changesheet',
        createdBy: 'bob',
        types: ['metadata-changesheet'],
      });
      expect(object).toMatchObject({ name: 'sheet.tsv', types: ['metadata-changesheet'] });
    });

    it('checksums bytes larger than one hashing slice (8 MiB) as one whole', async () => {
      const content = Buffer.alloc(8 * 1024 * 1024 * 2 + 12345, randomUUID());
      const object = await objects.prepare({
        content,
        mimeType: 'text/plain',
        description: 'd',
        createdBy: 'a',
      });
      expect(object.checksums).toEqual([{ type: 'sha256', checksum: sha256(content) }]);
      expect(object.size).toBe(content.length);
    });

    it('stores equal bytes once: two objects, one copy, both readable', async () => {
      const content = Buffer.from(`same bytes ${randomUUID()}`);
      const input = { content, mimeType: 'text/plain', description: 'd', createdBy: 'alice' };
      const a = await objects.prepare(input);
      const b = await objects.prepare(input);
      expect(a.id).not.toBe(b.id);
      expect(a.checksums).toEqual(b.checksums);
      await f.store.upsertMany(OBJECTS, [objectRecord(a), objectRecord(b)]);
      expect(await objects.read(a.id)).toEqual(content);
      expect(await objects.read(b.id)).toEqual(content);
      expect(await f.bytes.get(sha256(content))).toEqual(content);
    });

    it('sweeps old bytes no record refers to, and keeps referenced or young ones', async () => {
      const kept = await objects.prepare({
        content: Buffer.from('committed'),
        mimeType: 'text/plain',
        description: 'd',
        createdBy: 'alice',
      });
      await f.store.upsertMany(OBJECTS, [objectRecord(kept)]);
      const orphan = await objects.prepare({
        content: Buffer.from('never committed'),
        mimeType: 'text/plain',
        description: 'd',
        createdBy: 'alice',
      });

      // Young bytes may belong to a commit still on its way in another process.
      expect(await objects.sweep(HOUR)).toBe(0);
      expect(await f.bytes.get(orphan.checksums[0]!.checksum)).not.toBeNull();

      expect(await objects.sweep(EVERYTHING_IS_OLD)).toBe(1);
      expect(await f.bytes.get(orphan.checksums[0]!.checksum)).toBeNull();
      expect((await objects.read(kept.id))!.toString()).toBe('committed');
    });

    it('opens with a sweep that leaves referenced bytes readable', async () => {
      const object = await objects.prepare({
        content: Buffer.from('kept across restarts'),
        mimeType: 'text/plain',
        description: 'd',
        createdBy: 'alice',
      });
      await f.store.upsertMany(OBJECTS, [objectRecord(object)]);
      const reopened = await openStoredObjects(f.dataDir, f.store);
      expect((await reopened.read(object.id))!.toString()).toBe('kept across restarts');
    });
  });
}

describeStoredObjects('files under DATA_DIR (embedded store)', async () => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'nmdc-objects-'));
  const store = new SqliteDocumentStore({ file: path.join(dataDir, 'nmdc.sqlite') });
  return {
    store,
    bytes: await objectBytesFor(dataDir, store),
    dataDir,
    dispose: async () => {
      await store.close();
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
});

describe('files under DATA_DIR', () => {
  it('lays bytes out by digest, leaves no temporary file, and sweeps leftovers of interrupted writes', async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'nmdc-objects-'));
    const store = new SqliteDocumentStore({ file: path.join(dataDir, 'nmdc.sqlite') });
    try {
      const bytes = await objectBytesFor(dataDir, store);
      const content = Buffer.from('laid out');
      const digest = sha256(content);
      await bytes.put(digest, content);
      const file = path.join(dataDir, 'objects', 'sha256', digest.slice(0, 2), digest);
      expect(fs.readFileSync(file, 'utf8')).toBe('laid out');
      expect(fs.readdirSync(path.join(dataDir, 'objects', 'tmp'))).toEqual([]);

      // A write killed before its rename leaves only a temporary file.
      const leftover = path.join(dataDir, 'objects', 'tmp', `${digest}.interrupted`);
      fs.writeFileSync(leftover, 'half');
      expect(await bytes.sweep(() => true, EVERYTHING_IS_OLD)).toBe(1);
      expect(fs.existsSync(leftover)).toBe(false);
      expect(fs.existsSync(file)).toBe(true);
      await expect(bytes.put('not-a-digest', content)).rejects.toThrow(/not a sha256 digest/);
    } finally {
      await store.close();
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  });
});

async function standIn(server = new StandInServer()) {
  const store = await storeOnClient(
    server.client() as unknown as MongoClient,
    loadConfig({ MONGO_URL: 'mongodb://db1,db2,db3/?replicaSet=rs0', LOG_LEVEL: 'silent' }),
    pino({ level: 'silent' }),
    'stand-in',
    { pruneEveryMs: 0 },
  );
  return { server, store, bytes: await objectBytesFor('/nonexistent', store) };
}

describeStoredObjects('GridFS (MongoDB stand-in)', async () => {
  const { store, bytes } = await standIn();
  return { store, bytes, dataDir: '/nonexistent', dispose: () => store.close() };
});

describe('GridFS sweep (MongoDB stand-in)', () => {
  it('finds the leftovers of uploads cut short without one reply holding every upload id', async () => {
    const { server, store, bytes } = await standIn();
    const chunks = (store.database as Db).collection('fs.chunks');
    const cutShort = Array.from({ length: 300 }, () => new ObjectId());
    for (const id of cutShort) {
      await chunks.insertOne({ files_id: id, n: 0, data: Buffer.from('part') });
      await chunks.insertOne({ files_id: id, n: 1, data: Buffer.from('more') });
    }
    const kept = Buffer.from('a complete upload');
    await bytes.put(sha256(kept), kept);
    // Scaled down from the server's 16 MB: the ids of 300 uploads do not fit in one reply.
    server.maxReplyBytes = 2000;
    expect(await bytes.sweep(() => true, EVERYTHING_IS_OLD)).toBe(300);
    expect(server.peek('nmdc', 'fs.chunks').map((c) => c.files_id)).toHaveLength(1);
    expect(await bytes.get(sha256(kept))).toEqual(kept);
    expect(server.log.filter((o) => o.op === 'distinct')).toEqual([]);
    await store.close();
  });

  it('never sweeps bytes from under a submission that stored the same bytes again', async () => {
    const { store, bytes } = await standIn();
    const files = (store.database as Db).collection('fs.files');
    const content = Buffer.from(`submitted twice ${randomUUID()}`);
    const digest = sha256(content);
    // Two hours ago a submission stored these bytes and died before committing its record.
    await bytes.put(digest, content);
    const twoHoursAgo = new Date(Date.now() - 2 * HOUR);
    await files.updateMany({}, { $set: { uploadDate: twoHoursAgo } });
    // A new submission stores the same bytes (already there), and commits its record only
    // after a sweep in another process has looked for references.
    await bytes.put(digest, content);
    expect(await bytes.sweep(() => false, HOUR)).toBe(0);
    expect(await bytes.get(digest)).toEqual(content);
    // Untouched for longer than the cutoff, unreferenced bytes do go.
    await files.updateMany({}, { $set: { 'metadata.touchedAt': twoHoursAgo } });
    expect(await bytes.sweep(() => false, HOUR)).toBe(1);
    expect(await bytes.get(digest)).toBeNull();
    await store.close();
  });
});

const mongoUrl = process.env.MONGO_URL;

describe.skipIf(!mongoUrl)('GridFS (set MONGO_URL to run)', () => {
  describeStoredObjects('GridFS (MongoDB store)', async () => {
    const name = `nmdc_test_${randomUUID().slice(0, 8)}`;
    const store = await openMongoStore(
      loadConfig({ MONGO_URL: mongoUrl, MONGO_DB: name, LOG_LEVEL: 'silent' }),
      pino({ level: 'silent' }),
    );
    return {
      store,
      bytes: await objectBytesFor('/nonexistent', store),
      dataDir: '/nonexistent',
      dispose: async () => {
        await store.close();
        const client = await MongoClient.connect(mongoUrl!);
        await client.db(name).dropDatabase();
        await client.close();
      },
    };
  });
});
