/**
 * The minter on an embedded store: blades as the original draws them, typecodes from the schema's
 * id patterns, minted ids that pass those patterns, retries on a taken blade, and the bounds of a
 * minting request.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { SqliteDocumentStore } from '../../src/store/sqlite/index.ts';
import {
  MAX_IDS_PER_REQUEST,
  Minter,
  PIDS,
  idPatternOfClass,
  isWellFormedBlade,
  typecodeOfClass,
  type BladeSource,
  type PidRecord,
} from '../../src/pids/index.ts';
import { bladeOf } from '../../src/pids/blade.ts';
import { TYPECODES } from '../../src/schema/nmdc.ts';
import { schemaView } from '../../src/schema/schema-view.ts';
import jsonSchema from '../../src/schema/vendor/nmdc-schema-11.23.0/nmdc.schema.json' with { type: 'json' };

const SITE = { siteId: 'unit-lab', clientId: 'client-1' };

/** Every class of the schema whose ids carry an NMDC typecode: what the minter accepts. */
const MINTABLE = Object.keys(schemaView().classes)
  .map((c) => `nmdc:${c}`)
  .filter((c) => typecodeOfClass(c).found)
  .sort();

/** The JSON Schema's pattern for the class's `id` (what the validator checks records against). */
function jsonSchemaIdPattern(schemaClass: string): RegExp {
  const defs = (
    jsonSchema as unknown as { $defs: Record<string, { properties?: { id?: { pattern?: string } } }> }
  ).$defs;
  return new RegExp(defs[schemaClass.slice(5)]!.properties!.id!.pattern!);
}

/** The id as a record carries it: workflow execution classes' patterns require a version (`.1`). */
function asRecordId(schemaClass: string, minted: string): string {
  return idPatternOfClass(schemaClass.slice(5))!.endsWith('(\\.[1-9]{1}[0-9]{0,})$') ? `${minted}.1` : minted;
}

/** Blades from a list, in turn: lets a test decide which draws collide. */
function bladesFrom(list: string[]): BladeSource & { drawn: number } {
  const source = Object.assign(
    () => {
      if (source.drawn >= list.length) throw new Error('blade list exhausted');
      return list[source.drawn++]!;
    },
    { drawn: 0 },
  );
  return source;
}

describe('blades', () => {
  it('are six Crockford base32 characters and the ISO 7064 check digits, as the original draws them', () => {
    // 1234 is "16j" in base32; 100 * 1234 mod 97 = 16, so the check digits are 98 - 16 = 82.
    expect(bladeOf(1234)).toBe('00016j82');
    expect(bladeOf(0)).toBe('00000098');
    expect(bladeOf(2 ** 30 - 1)).toMatch(/^zzzzzz[0-9]{2}$/);
    expect(() => bladeOf(2 ** 30)).toThrow(RangeError);
    expect(isWellFormedBlade('00016j82')).toBe(true);
    expect(isWellFormedBlade('00016j83')).toBe(false);
    expect(isWellFormedBlade('00016i82')).toBe(false);
  });
});

describe('typecodes of schema classes', () => {
  it('take the first typecode the class id pattern names', () => {
    const name = (c: string) => {
      const lookup = typecodeOfClass(c);
      return lookup.found ? lookup.typecode.name : lookup.reason;
    };
    expect(name('nmdc:Biosample')).toBe('bsm');
    expect(name('nmdc:Study')).toBe('sty');
    expect(name('nmdc:DataObject')).toBe('dobj');
    expect(name('nmdc:NucleotideSequencing')).toBe('dgns');
    expect(name('nmdc:MassSpectrometry')).toBe('dgms');
    expect(name('nmdc:MetatranscriptomeExpressionAnalysis')).toBe('wfmtex');
    expect(name('nmdc:MetagenomeAssembly')).toBe('wfmgas');
    expect(name('nmdc:DataGeneration')).toBe('no_typecode'); // abstract
    expect(name('nmdc:OntologyClass')).toBe('no_typecode');
    expect(name('nmdc:Biosampel')).toBe('unknown_class');
    expect(name('Biosample')).toBe('unknown_class');
    expect(name('nmdc:constructor')).toBe('unknown_class');
    expect(typecodeOfClass('nmdc:Biosample')).toEqual({
      found: true,
      typecode: { id: 'nmdc:Biosample_typecode', schema_class: 'nmdc:Biosample', name: 'bsm' },
    });
  });

  it('agree with the typecodes the service recognises in ids for every class it lists', () => {
    for (const listed of TYPECODES) {
      const lookup = typecodeOfClass(listed.schemaClass);
      if (!lookup.found) continue;
      const namesOfClass = TYPECODES.filter((t) => t.schemaClass === listed.schemaClass).map((t) => t.name);
      expect(namesOfClass, listed.schemaClass).toContain(lookup.typecode.name);
    }
    expect(MINTABLE.length).toBeGreaterThanOrEqual(35);
  });
});

describe('the minter on an embedded store', () => {
  let dir: string;
  let store: SqliteDocumentStore;
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pids-unit-'));
    store = new SqliteDocumentStore({ file: path.join(dir, 'nmdc.sqlite') });
  });
  afterEach(async () => {
    await store.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('mints ids of every mintable class that pass the class id pattern and the JSON Schema pattern', async () => {
    const minter = new Minter(store);
    for (const schemaClass of MINTABLE) {
      const ids = await minter.mint(SITE, schemaClass, 2);
      const lookup = typecodeOfClass(schemaClass);
      const typecode = lookup.found ? lookup.typecode.name : '?';
      const classPattern = new RegExp(idPatternOfClass(schemaClass.slice(5))!);
      for (const id of ids) {
        expect(id).toMatch(new RegExp(`^nmdc:${typecode}-11-[0-9a-hjkmnp-tv-z]{6}[0-9]{2}$`));
        expect(isWellFormedBlade(id.split('-')[2]!)).toBe(true);
        expect(asRecordId(schemaClass, id), schemaClass).toMatch(classPattern);
        expect(asRecordId(schemaClass, id)).toMatch(jsonSchemaIdPattern(schemaClass));
      }
    }
  });

  it('keeps each id as a draft record with the minting site and time', async () => {
    const before = new Date().toISOString();
    const [id] = await new Minter(store).mint(SITE, 'nmdc:Biosample', 1);
    const record = (await store.getById(PIDS, id!)) as unknown as PidRecord;
    expect(record).toEqual({
      id,
      schema_class: 'nmdc:Biosample',
      typecode: 'bsm',
      shoulder: '11',
      status: 'draft',
      bindings: null,
      site_id: 'unit-lab',
      client_id: 'client-1',
      created_at: expect.any(String),
    });
    expect(await new Minter(store).resolve(id!)).toEqual({
      id,
      name: id,
      typecode: { id: 'nmdc:Biosample_typecode', schema_class: 'nmdc:Biosample', name: 'bsm' },
      shoulder: { id: 'nmdc:minter_shoulder_11', assigned_to: 'nmdc:minter_service_11', name: '11' },
      status: 'draft',
      bindings: null,
    });
    expect(record.created_at >= before).toBe(true);
  });

  it('draws again when a blade is taken, so every id of a request is new', async () => {
    const blades = bladesFrom(['aaaaaa11', 'aaaaaa11', 'bbbbbb22', 'aaaaaa11', 'bbbbbb22', 'cccccc33']);
    const minter = new Minter(store, { blades, parallelInserts: 1 });
    const ids = await minter.mint(SITE, 'nmdc:Biosample', 3);
    expect(ids).toEqual(['nmdc:bsm-11-aaaaaa11', 'nmdc:bsm-11-bbbbbb22', 'nmdc:bsm-11-cccccc33']);
    expect(blades.drawn).toBe(6);
    expect(await store.count(PIDS, {})).toBe(3);
  });

  it('draws again when another minter on the same store file took the blade first', async () => {
    const other = new SqliteDocumentStore({ file: path.join(dir, 'nmdc.sqlite') });
    try {
      const [taken] = await new Minter(other, { blades: bladesFrom(['dddddd44']) }).mint(
        SITE,
        'nmdc:Study',
        1,
      );
      const blades = bladesFrom(['dddddd44', 'dddddd44', 'eeeeee55']);
      const [mine] = await new Minter(store, { blades }).mint(
        { siteId: 'other-lab', clientId: 'c2' },
        'nmdc:Study',
        1,
      );
      expect(taken).toBe('nmdc:sty-11-dddddd44');
      expect(mine).toBe('nmdc:sty-11-eeeeee55');
      expect(blades.drawn).toBe(3);
      // The first minter's record is untouched.
      const record = (await store.getById(PIDS, taken!)) as unknown as PidRecord;
      expect(record.site_id).toBe('unit-lab');
    } finally {
      await other.close();
    }
  });

  it('with parallel inserts and a source that repeats itself, still answers distinct ids', async () => {
    let i = 0;
    // Every blade comes up twice in a row: every other draw collides.
    const repeating: BladeSource = () => bladeOf(Math.floor(i++ / 2) * 7919);
    const minter = new Minter(store, { blades: repeating, parallelInserts: 8 });
    const ids = await minter.mint(SITE, 'nmdc:DataObject', 200);
    expect(new Set(ids).size).toBe(200);
    expect(i).toBeGreaterThan(200);
    expect(await store.count(PIDS, {})).toBe(200);
  });

  it('gives up with an error when the blade source only repeats taken blades', async () => {
    await new Minter(store, { blades: () => 'ffffff66' }).mint(SITE, 'nmdc:Biosample', 1);
    const stuck = new Minter(store, { blades: () => 'ffffff66', attemptsPerId: 5 });
    await expect(stuck.mint(SITE, 'nmdc:Biosample', 1)).rejects.toThrow(
      'no unused bsm identifier after 5 blades',
    );
  });

  it('refuses how_many out of 1..MAX and unknown or typecode-less classes with 422', async () => {
    const minter = new Minter(store);
    for (const howMany of [0, -1, 1.5, MAX_IDS_PER_REQUEST + 1]) {
      await expect(minter.mint(SITE, 'nmdc:Biosample', howMany)).rejects.toMatchObject({
        kind: 'unprocessable',
        detail: `how_many must be an integer from 1 to ${MAX_IDS_PER_REQUEST}, not ${howMany}`,
      });
    }
    await expect(minter.mint(SITE, 'nmdc:Biosampel', 1)).rejects.toMatchObject({
      kind: 'unprocessable',
      detail: 'Unknown schema class nmdc:Biosampel',
    });
    await expect(minter.mint(SITE, 'nmdc:DataGeneration', 1)).rejects.toMatchObject({
      kind: 'unprocessable',
      detail: 'Cannot map schema class nmdc:DataGeneration to a typecode',
    });
    expect(await store.count(PIDS, {})).toBe(0);
  });

  it('refuses a shoulder the schema would not accept', () => {
    expect(() => new Minter(store, { shoulder: { id: 'x', assigned_to: 'y', name: '1a' } })).toThrow(
      /shoulder 1a/,
    );
  });
});
