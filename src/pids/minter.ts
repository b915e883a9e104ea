/**
 * The minter: persistent identifiers for NMDC records, minted before the records are submitted.
 * An id is `nmdc:<typecode>-<shoulder>-<blade>`: the typecode of the record's schema class, the
 * shoulder of this minting service, and a random blade. Each minted id is kept in the document
 * store collection `pids` with its status (`draft` until records use it), the site (and site
 * client) that minted it and when. Uniqueness does not depend on which process mints: every id
 * is written with the store's insert-if-absent, and a blade already taken is drawn again.
 *
 * The shoulder: the original service assigns one shoulder to the minting service
 * (`nmdc:minter_shoulder_11`, named `11`, assigned to `nmdc:minter_service_11`), and every site
 * mints on it; the minting site is recorded beside each id instead. This service does the same.
 */
import type { Doc, DocumentStore } from '../store/port.ts';
import { Forbidden, NotFound, Unprocessable } from '../errors.ts';
import { collectionOfId } from '../schema/nmdc.ts';
import { randomBlade, type BladeSource } from './blade.ts';
import { typecodeOfClass, type TypecodeOfClass } from './schema-classes.ts';

/** The document store collection of minted identifiers. */
export const PIDS = 'pids';

/** Identifier statuses, after DataCite's DOI states. Only `draft` ids can be changed or deleted. */
export const PID_STATUSES = ['draft', 'registered', 'findable'] as const;
export type PidStatus = (typeof PID_STATUSES)[number];

export interface MintingService {
  id: string;
  name: string;
}

export interface Shoulder {
  id: string;
  /** The minting service the shoulder belongs to. */
  assigned_to: string;
  /** What goes in the id: one digit, up to six lower-case letters, one digit (the schema's rule). */
  name: string;
}

/** The original service's central minting service and its shoulder. */
export const MINTING_SERVICE: MintingService = {
  id: 'nmdc:minter_service_11',
  name: 'central minting service',
};
export const SHOULDER_11: Shoulder = {
  id: 'nmdc:minter_shoulder_11',
  assigned_to: MINTING_SERVICE.id,
  name: '11',
};

/** The schema's rule for shoulders (`id_shoulder` in the NMDC schema's id patterns). */
const SHOULDER_PATTERN = /^[0-9][a-z]{0,6}[0-9]$/;

/** Most ids one request may mint; the original mints 1,000 at a time in its own tests. */
export const MAX_IDS_PER_REQUEST = 10_000;

/** Ids minted between two turns given to other requests. */
const YIELD_EVERY = 64;

/** Defaults of the original's minting request. */
export const DEFAULT_SCHEMA_CLASS = 'nmdc:Biosample';

/** Who asks: a site client, acting for its site. */
export interface Requester {
  siteId: string;
  clientId: string;
}

/** An identifier as the endpoints answer it (the original's `Identifier`). */
export interface Identifier {
  id: string;
  name: string;
  typecode: TypecodeOfClass;
  shoulder: Shoulder;
  status: PidStatus;
  bindings: Record<string, unknown> | null;
}

/**
 * What the store keeps, flat and lean (the search index and the attribute index see every field
 * of it): the answer's typecode and shoulder objects are rebuilt from their names on reading.
 */
export interface PidRecord {
  id: string;
  schema_class: string;
  typecode: string;
  shoulder: string;
  status: PidStatus;
  bindings: Record<string, unknown> | null;
  /** The site that minted the id, and the site client that asked. */
  site_id: string;
  client_id: string;
  created_at: string;
  bound_at?: string;
  /** When a stored record first had the id, and that record's id (the minted id, or it with a version). */
  registered_at?: string;
  registered_by_record?: string;
}

export interface MinterOptions {
  shoulder?: Shoulder;
  blades?: BladeSource;
  /** Blades drawn for one id before giving up; with 2^30 blades per typecode, only a broken source runs out. */
  attemptsPerId?: number;
  /** Inserts in flight at once for one request (the embedded store runs them one by one anyway). */
  parallelInserts?: number;
}

const unknownId = (idName: string) => new NotFound(`ID ${idName} is unknown`);

function identifierOf(record: PidRecord, shoulder: Shoulder): Identifier {
  return {
    id: record.id,
    name: record.id,
    typecode: {
      id: `${record.schema_class}_typecode`,
      schema_class: record.schema_class,
      name: record.typecode,
    },
    shoulder:
      record.shoulder === shoulder.name
        ? shoulder
        : { ...shoulder, id: `nmdc:minter_shoulder_${record.shoulder}`, name: record.shoulder },
    status: record.status,
    bindings: record.bindings ?? null,
  };
}

export class Minter {
  readonly shoulder: Shoulder;
  private readonly blades: BladeSource;
  private readonly attemptsPerId: number;
  private readonly parallelInserts: number;

  constructor(
    private readonly store: DocumentStore,
    options: MinterOptions = {},
  ) {
    this.shoulder = options.shoulder ?? SHOULDER_11;
    if (!SHOULDER_PATTERN.test(this.shoulder.name)) {
      throw new Error(`shoulder ${this.shoulder.name} breaks the schema's rule ${SHOULDER_PATTERN.source}`);
    }
    this.blades = options.blades ?? randomBlade;
    this.attemptsPerId = options.attemptsPerId ?? 64;
    this.parallelInserts = options.parallelInserts ?? 8;
  }

  /** Mints `howMany` new draft ids of the schema class for the requester, in the order minted. */
  async mint(requester: Requester, schemaClass: string, howMany: number): Promise<string[]> {
    if (!Number.isInteger(howMany) || howMany < 1 || howMany > MAX_IDS_PER_REQUEST) {
      throw new Unprocessable(`how_many must be an integer from 1 to ${MAX_IDS_PER_REQUEST}, not ${howMany}`);
    }
    const lookup = typecodeOfClass(schemaClass);
    if (!lookup.found) {
      throw new Unprocessable(
        lookup.reason === 'unknown_class'
          ? `Unknown schema class ${schemaClass}`
          : `Cannot map schema class ${schemaClass} to a typecode`,
      );
    }
    const { typecode } = lookup;
    const minted: string[] = new Array(howMany);
    let next = 0;
    const worker = async () => {
      for (let slot = next++; slot < howMany; slot = next++) {
        minted[slot] = await this.mintOne(requester, typecode);
        // The embedded store writes synchronously: give other requests a turn now and then.
        if (slot % YIELD_EVERY === YIELD_EVERY - 1) await new Promise((resolve) => setImmediate(resolve));
      }
    };
    await Promise.all(Array.from({ length: Math.min(this.parallelInserts, howMany) }, worker));
    return minted;
  }

  /** One id: draw blades until the store takes one no other request (of any process) holds. */
  private async mintOne(requester: Requester, typecode: TypecodeOfClass): Promise<string> {
    for (let attempt = 0; attempt < this.attemptsPerId; attempt++) {
      const id = `nmdc:${typecode.name}-${this.shoulder.name}-${this.blades()}`;
      const record: PidRecord = {
        id,
        schema_class: typecode.schema_class,
        typecode: typecode.name,
        shoulder: this.shoulder.name,
        status: 'draft',
        bindings: null,
        site_id: requester.siteId,
        client_id: requester.clientId,
        created_at: new Date().toISOString(),
      };
      if (await this.store.insertIfAbsent(PIDS, record as unknown as Doc)) return id;
    }
    throw new Error(`no unused ${typecode.name} identifier after ${this.attemptsPerId} blades`);
  }

  async resolve(idName: string): Promise<Identifier | null> {
    const record = await this.record(idName);
    return record && identifierOf(record, this.shoulder);
  }

  /** Binds a metadata record to a draft id (replacing an earlier binding). Only the minting site may. */
  async bind(
    requester: Requester,
    idName: string,
    metadataRecord: Record<string, unknown>,
  ): Promise<Identifier> {
    const record = await this.record(idName);
    if (!record) throw unknownId(idName);
    if (record.status !== 'draft') throw new Forbidden("Status not 'draft'. Can't change bound metadata");
    if (record.site_id !== requester.siteId) {
      throw new Forbidden(
        `ID ${idName} was minted by another site; only the site that minted an id can bind metadata to it`,
      );
    }
    // A delete of the same id at this very moment (only the same site may do both) could be undone
    // by this write; the store has no conditional update, and the site can delete again.
    const bound: PidRecord = { ...record, bindings: metadataRecord, bound_at: new Date().toISOString() };
    await this.store.upsertMany(PIDS, [bound as unknown as Doc]);
    return identifierOf(bound, this.shoulder);
  }

  /** Deletes a draft id. Only the minting site may. */
  async delete(requester: Requester, idName: string): Promise<void> {
    for (let attempt = 0; attempt < 3; attempt++) {
      const record = await this.record(idName);
      if (!record) throw unknownId(idName);
      if (record.status !== 'draft') throw new Forbidden("Status not 'draft'. Can't delete.");
      if (record.site_id !== requester.siteId) {
        throw new Forbidden(
          `ID ${idName} was minted by another site; only the site that minted an id can delete it`,
        );
      }
      // Conditional on what was just checked, so a status changed in between is never deleted.
      const deleted = await this.store.deleteMany(
        PIDS,
        { id: idName, status: 'draft', site_id: requester.siteId },
        1,
      );
      if (deleted.length > 0) return;
    }
    throw unknownId(idName);
  }

  /** The id's record; a draft whose id a stored record now has is registered first (see `registerIfStored`). */
  private async record(idName: string): Promise<PidRecord | null> {
    const record = (await this.store.getById(PIDS, idName)) as unknown as PidRecord | null;
    if (!record || record.status !== 'draft') return record;
    return (await this.registerIfStored(record)) ?? record;
  }

  /**
   * A draft id stops being one once a metadata record with it is stored (a workflow execution's
   * id is the minted id and a version, `<id>.1`): it becomes `registered`, as DataCite's DOIs do
   * when they are first used, and can no longer be bound again or deleted. Decided when the id is
   * next looked at, whichever way the record came in (a submission, a changesheet, a load, another
   * process), and kept in the store.
   */
  private async registerIfStored(record: PidRecord): Promise<PidRecord | undefined> {
    const collection = collectionOfId(record.id);
    if (!collection) return undefined;
    const stored =
      (await this.store.getById(collection, record.id, ['id'])) ??
      // `<id>.<version>`: ids greater than `<id>.` and less than `<id>/` ('/' follows '.').
      (
        await this.store.find(
          collection,
          { id: { $gt: `${record.id}.`, $lt: `${record.id}/` } },
          { limit: 1 },
        )
      )[0];
    if (!stored) return undefined;
    return this.store.readModifyWrite([{ collection: PIDS, id: record.id }], ([current]) => {
      const pid = current as unknown as PidRecord | null;
      if (!pid || pid.status !== 'draft') return { writes: [], value: pid ?? record };
      const registered: PidRecord = {
        ...pid,
        status: 'registered',
        registered_at: new Date().toISOString(),
        registered_by_record: String(stored.id),
      };
      return { writes: [{ collection: PIDS, docs: [registered as unknown as Doc] }], value: registered };
    });
  }
}
