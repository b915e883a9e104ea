/**
 * Objects as GA4GH DRS 1.x objects (`/objects...`, `/ga4gh/drs/v1/objects/{id}`): the files sites
 * register (`POST /objects`: a checksum, a size, access methods) and the payloads the service
 * stored itself (submitted JSON, changesheets; `stored-objects.ts`), in one collection `objects`.
 *
 * A site's object records which site manages it (`_mgr_site`, as the original's), and only that
 * site's clients may change it. The service's own objects have no manager site; they are shown
 * with an access method whose access id is the object's id, resolved to `GET /objects/{id}/content`,
 * which serves the stored bytes. `self_uri` is worked out when an object is shown, from the
 * service's public URL, so it never goes stale.
 */
import { createHash } from 'node:crypto';
import type { Doc, DocumentStore, Filter } from '../store/port.ts';
import type { Principal } from '../accounts/principal.ts';
import { Conflict, Forbidden, NotFound, Unprocessable } from '../errors.ts';
import { COLLECTION_NAMES, collectionOfId, isTypecode } from '../schema/nmdc.ts';
import { compileProjection } from '../store/projection.ts';
import { OBJECTS, sha256Of, type StoredObject, type StoredObjects } from './stored-objects.ts';
import {
  checkObjectShape,
  isServiceObject,
  managerOf,
  REQUIRED_FIELDS,
  SHOWN_FIELDS,
  writableFields,
  type AccessUrl,
  type Checksum,
  type DrsObject,
} from './drs-records.ts';
import { mintSystemId } from './system-ids.ts';
import { TRIGGER_FIRINGS, firingId, newFirings, triggersOfTypes } from '../workflows/triggers.ts';
import { OBJECT_TYPES } from '../workflows/catalog.ts';

/**
 * One record per (checksum type, checksum) of a registered object, id `<type>:<checksum>`: the
 * uniqueness the original gets from a unique index on `checksums`, decided in the transaction that
 * registers the object.
 */
export const OBJECT_CHECKSUMS = 'object_checksums';

export {
  CHECKSUM_TYPES,
  isServiceObject,
  managerOf,
  normalizedTime,
  RUNTIME_SITE,
  type AccessMethod,
  type AccessUrl,
  type Checksum,
  type ContentsObject,
  type DrsObject,
} from './drs-records.ts';

function checksumGuardIds(checksums: Checksum[]): string[] {
  return [...new Set(checksums.map((c) => `${c.type}:${c.checksum}`))];
}

/** Throws 409 when a checksum record read in the transaction belongs to another object. */
function refuseTakenChecksums(id: string, guards: Array<Doc | null>): void {
  const taken = guards.find((g) => g !== null && typeof g.object_id === 'string' && g.object_id !== id);
  if (taken) {
    throw new Conflict(`provided checksum matches existing object ${String(taken.object_id)}: ${taken.id}`);
  }
}

export interface ObjectTypesChange {
  object: DrsObject;
  /** Trigger firings queued by this change, to dispatch now. */
  firingIds: string[];
}

export class DrsObjects {
  /** `drs://<host>` of the public URL. */
  private readonly drsAuthority: string;

  constructor(
    private readonly store: DocumentStore,
    private readonly storedObjects: StoredObjects,
    private readonly publicUrl: string,
  ) {
    this.drsAuthority = `drs://${new URL(publicUrl).host}`;
  }

  /** An object record as shown: DRS fields only, `self_uri` worked out, the service's bytes reachable. */
  shown(record: Doc): DrsObject {
    const full: Record<string, unknown> = { ...record, self_uri: `${this.drsAuthority}/${record.id}` };
    if (
      isServiceObject(record) &&
      full.access_methods === undefined &&
      sha256Of(record as unknown as StoredObject)
    ) {
      full.access_methods = [{ type: 'https', access_id: record.id }];
    }
    const out: Record<string, unknown> = {};
    for (const field of SHOWN_FIELDS) if (full[field] !== undefined) out[field] = full[field];
    return out as unknown as DrsObject;
  }

  /** Registers a site's object (`POST /objects`). */
  async create(body: Record<string, unknown>, siteId: string): Promise<DrsObject> {
    const { set } = writableFields(body);
    // As the original: the runtime's own id shoulder, without the `nmdc:` prefix (a DRS id has no colon).
    const id = mintSystemId().replace(/^nmdc:/, '');
    const record: Doc = {
      ...set,
      id,
      created_time: set.created_time ?? new Date().toISOString(),
      _mgr_site: siteId,
    };
    checkObjectShape(record);
    const checksums = record.checksums as Checksum[];
    await this.refuseKnownChecksums(id, checksums);
    const guardIds = checksumGuardIds(checksums);
    await this.store.readModifyWrite(
      guardIds.map((guardId) => ({ collection: OBJECT_CHECKSUMS, id: guardId })),
      (current) => {
        refuseTakenChecksums(id, current);
        return {
          writes: [
            { collection: OBJECTS, docs: [record] },
            {
              collection: OBJECT_CHECKSUMS,
              docs: guardIds.map((guardId) => ({ id: guardId, object_id: id })),
            },
          ],
          value: undefined,
        };
      },
    );
    return this.shown(record);
  }

  /** The service's own objects carry a sha256 but no checksum record; a site may not register their bytes again. */
  private async refuseKnownChecksums(id: string, checksums: Checksum[]): Promise<void> {
    for (const { type, checksum } of checksums) {
      const [same] = await this.store.find(
        OBJECTS,
        { id: { $ne: id }, checksums: { $elemMatch: { type, checksum } } },
        { limit: 1, projection: ['id'] },
      );
      if (same)
        throw new Conflict(`provided checksum matches existing object ${same.id}: ${type}:${checksum}`);
    }
  }

  async get(id: string): Promise<DrsObject | null> {
    const record = await this.store.getById(OBJECTS, id);
    return record ? this.shown(record) : null;
  }

  async require(id: string): Promise<Doc> {
    const record = await this.store.getById(OBJECTS, id);
    if (!record) throw new NotFound(`Object ${id} not found`);
    return record;
  }

  /** Reads for `GET /objects` (id order, keyset paging); a projection keeps `id` and the named fields. */
  async find(
    filter: Filter,
    page: { projection?: string[]; afterId?: string; limit?: number },
  ): Promise<Doc[]> {
    const records = await this.store.find(OBJECTS, filter, { afterId: page.afterId, limit: page.limit });
    const shown = records.map((r) => this.shown(r) as unknown as Doc);
    if (!page.projection) return shown;
    const project = compileProjection([...new Set(['id', ...page.projection])]);
    return shown.map(project);
  }

  /**
   * `PATCH /objects/{id}`: only the managing site's clients; `updated_time` becomes now. Checksums
   * stay unique: the checksum records of new checksums are claimed and those of dropped ones freed
   * in the same transaction.
   */
  async patch(id: string, body: Record<string, unknown>, principal: Principal): Promise<DrsObject> {
    const { set, unset } = writableFields(body);
    const kept = unset.filter((field) => REQUIRED_FIELDS.has(field));
    if (kept.length > 0) throw new Unprocessable(`${kept.join(', ')} cannot be removed from an object`);
    const now = new Date().toISOString();
    const newChecksums = (set.checksums as Checksum[] | undefined) ?? [];
    await this.refuseKnownChecksums(id, newChecksums);
    const claimed = checksumGuardIds(newChecksums);
    const patched = await this.store.readModifyWrite(
      [
        { collection: OBJECTS, id },
        ...claimed.map((guardId) => ({ collection: OBJECT_CHECKSUMS, id: guardId })),
      ],
      ([current, ...guards]) => {
        if (!current) throw new NotFound(`Object ${id} not found`);
        const manager = managerOf(current);
        if (principal.siteId !== manager) {
          throw new Forbidden(`client authorized for different site_id than ${manager}`);
        }
        const next: Doc = { ...current, ...set, updated_time: now };
        for (const field of unset) if (field !== 'updated_time') delete next[field];
        checkObjectShape(next);
        const writes: Array<{ collection: string; docs: Doc[] }> = [{ collection: OBJECTS, docs: [next] }];
        if (set.checksums !== undefined) {
          refuseTakenChecksums(id, guards);
          const freed = checksumGuardIds((current.checksums as Checksum[] | undefined) ?? []).filter(
            (guardId) => !claimed.includes(guardId),
          );
          writes.push({
            collection: OBJECT_CHECKSUMS,
            docs: [
              ...claimed.map((guardId) => ({ id: guardId, object_id: id })),
              // Freed, not deleted (a transaction here only upserts): a free checksum has no object.
              ...freed.map((guardId) => ({ id: guardId, object_id: null })),
            ],
          });
        }
        return { writes, value: next };
      },
    );
    return this.shown(patched);
  }

  /** The object type records of an object's types. */
  async typesOf(id: string): Promise<Doc[]> {
    const record = await this.require(id);
    const types = Array.isArray(record.types) ? (record.types as string[]) : [];
    if (types.length === 0) return [];
    return this.store.find(OBJECT_TYPES, { id: { $in: types } });
  }

  /**
   * `PUT /objects/{id}/types`: replaces the object's types and, in the same transaction, queues one
   * firing per trigger of each type the object newly gained that has not fired for it before.
   * A runtime administrator, or a client of the site managing the object, may do it.
   */
  async replaceTypes(id: string, typeIds: string[], principal: Principal): Promise<ObjectTypesChange> {
    const wanted = [...new Set(typeIds)];
    const known = await this.store.find(OBJECT_TYPES, { id: { $in: wanted } }, { projection: ['id'] });
    const knownIds = new Set(known.map((t) => t.id));
    const unknown = wanted.filter((t) => !knownIds.has(t));
    if (unknown.length > 0) throw new Unprocessable(`unknown object type ids: ${unknown.join(', ')}`);
    const triggers = await triggersOfTypes(this.store, wanted);
    const candidates = triggers.map((t) => firingId(t.id, id));
    const now = new Date().toISOString();
    const result = await this.store.readModifyWrite(
      [
        { collection: OBJECTS, id },
        ...candidates.map((firing) => ({ collection: TRIGGER_FIRINGS, id: firing })),
      ],
      ([current, ...fired]) => {
        if (!current) throw new NotFound(`Object ${id} not found`);
        if (!principal.isRuntimeAdmin && principal.siteId !== managerOf(current)) {
          throw new Forbidden(
            `Only a client of the site managing object ${id} (${managerOf(current)}) or a runtime administrator may set its types`,
          );
        }
        const before = Array.isArray(current.types) ? (current.types as string[]) : [];
        const existing = new Map(candidates.map((firing, i) => [firing, fired[i] ?? null]));
        const firings = newFirings(id, before, wanted, triggers, existing, now);
        const next: Doc = { ...current, types: wanted };
        const writes = [{ collection: OBJECTS, docs: [next] }];
        if (firings.length > 0) {
          writes.push({ collection: TRIGGER_FIRINGS, docs: firings as unknown as Doc[] });
        }
        return { writes, value: { record: next, firingIds: firings.map((f) => f.id) } };
      },
    );
    return { object: this.shown(result.record), firingIds: result.firingIds };
  }

  /** `GET /objects/{id}/access/{access_id}`: where the bytes of one access method are. */
  async accessUrl(id: string, accessId: string): Promise<AccessUrl> {
    const record = await this.require(id);
    const methods = this.shown(record).access_methods ?? [];
    const method = methods.find((m) => m.access_id === accessId);
    if (!method) throw new NotFound(`access_id ${accessId} not referenced by object ${id}`);
    if (isServiceObject(record) && accessId === id) {
      return { url: `${this.publicUrl}/objects/${encodeURIComponent(id)}/content` };
    }
    if (method.access_url) return method.access_url;
    throw new NotFound(`no site found to handle access_id ${accessId} for object ${id}`);
  }

  /** The bytes of one of the service's own objects, checked against its sha256. */
  async content(id: string): Promise<{ record: Doc; bytes: Buffer }> {
    const record = await this.require(id);
    const sha256 = sha256Of(record as unknown as StoredObject);
    if (!isServiceObject(record) || !sha256) {
      throw new NotFound(
        `Object ${id} is registered by site ${managerOf(record)}; its bytes are not kept here`,
      );
    }
    const bytes = await this.storedObjects.read(id);
    if (!bytes) throw new NotFound(`The bytes of object ${id} are missing`);
    const actual = createHash('sha256').update(bytes).digest('hex');
    if (actual !== sha256) {
      throw new Error(`stored bytes of object ${id} have sha256 ${actual}, not ${sha256}`);
    }
    return { record, bytes };
  }

  /**
   * Where `GET /objects/{id}` sends an id that is not an object but names something else, as the
   * original: the schema's documentation for `nmdc`, and a metadata record (an id with a typecode,
   * with or without `nmdc:`) to `/nmdcschema/ids/nmdc:<id>` when the record exists. Undefined otherwise.
   */
  async redirectFor(id: string): Promise<string | undefined> {
    if (id === 'nmdc') return 'https://microbiomedata.github.io/nmdc-schema';
    const recordId = id.startsWith('nmdc:') ? id : `nmdc:${id}`;
    const typecode = /^nmdc:([a-z0-9]+)-/.exec(recordId)?.[1];
    if (typecode === undefined || !isTypecode(typecode)) return undefined;
    const likely = collectionOfId(recordId);
    const order = likely ? [likely, ...COLLECTION_NAMES.filter((c) => c !== likely)] : [...COLLECTION_NAMES];
    for (const collection of order) {
      if (await this.store.getById(collection, recordId, ['id'])) {
        return `${this.publicUrl}/nmdcschema/ids/${recordId}`;
      }
    }
    return undefined;
  }
}
