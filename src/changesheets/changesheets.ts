/**
 * Changesheets: corrections to existing records written as a TSV or CSV sheet (see `plan.ts` for
 * how rows read). Checking a sheet finds its records, plans their updates, applies them to copies
 * and validates the records as they would become against the schema and the store; the answer
 * has the original's shape (`update_cmd`, `results_of_updates` with each record before and after).
 * Submitting checks the same way, keeps the sheet as a stored object, and writes the changed
 * records and the object's record in one atomic write, through the record writer so the search
 * index and the provenance edges follow.
 */
import type { Logger } from 'pino';
import type { Doc, DocumentStore } from '../store/port.ts';
import type { Principal } from '../auth/index.ts';
import { COLLECTION_NAMES, UNIDENTIFIED_COLLECTIONS, collectionOfId } from '../schema/nmdc.ts';
import { Conflict, Unprocessable } from '../errors.ts';
import { MetadataValidator } from '../validation/index.ts';
import { OBJECTS, objectRecord, type StoredObject, type StoredObjects } from '../objects/stored-objects.ts';
import { ChangesheetProblems } from './problems.ts';
import { Turns } from '../turns.ts';
import { readSheetInTurns, type Sheet, type SheetRow, type SheetUpload } from './sheet.ts';
import { BlockPlanner, blocksOf, type PlannedUpdate } from './plan.ts';
import { UpdateConflict, applyStatement, sameValue, type UpdateStatement } from './update-operators.ts';

/** Object type of kept changesheets, as the original sets it. */
export const CHANGESHEET_OBJECT_TYPE = 'metadata-changesheet';

/** Ids asked of the store at once. */
const LOOKUP_BATCH = 500;

/** The collections records can be addressed in by id. */
const IDENTIFIED_COLLECTIONS: readonly string[] = COLLECTION_NAMES.filter(
  (c) => !UNIDENTIFIED_COLLECTIONS.has(c),
);

/** The part of RecordWriter (search/writer.ts) a submission needs. */
export interface AtomicUpserts {
  upsertAll(
    writes: Array<{ collection: string; docs: Array<Doc | Record<string, unknown>> }>,
  ): Promise<unknown>;
}

/** One record's change, in the original's `results_of_updates` shape (with its collection). */
export interface RecordChange {
  id: string;
  collection: string;
  doc_before: Doc;
  doc_after: Doc;
  /** As MongoDB's update command reports: statements matched, statements that changed the record. */
  update_info: { n: number; nModified: number; ok: number };
  validation_errors: string[];
  updates: PlannedUpdate[];
}

export interface CheckedChangesheet {
  sheet: Sheet;
  changes: RecordChange[];
}

type UpdateCommands = Record<
  string,
  { update: string; updates: Array<{ q: { id: string }; u: UpdateStatement }> }
>;

/** The original's `update_cmd`: per record id, its collection and its update statements. */
export function updateCommandsOf(changes: RecordChange[]): UpdateCommands {
  const out: UpdateCommands = {};
  for (const change of changes) {
    out[change.id] = {
      update: change.collection,
      updates: change.updates.map((u) => ({ q: { id: change.id }, u: u.statement })),
    };
  }
  return out;
}

/** The `:validate` answer: the update commands and each record before and after them. */
export function validationAnswerOf(checked: CheckedChangesheet): Record<string, unknown> {
  return {
    update_cmd: updateCommandsOf(checked.changes),
    results_of_updates: checked.changes.map((c) => ({
      id: c.id,
      doc_before: c.doc_before,
      update_info: c.update_info,
      doc_after: c.doc_after,
      validation_errors: c.validation_errors,
    })),
  };
}

/** A file name safe to keep, as the original makes it (anything else becomes `_`). */
export function portableName(filename: string | undefined): string | undefined {
  if (!filename) return undefined;
  return filename.replace(/[^A-Za-z0-9._-]/g, '_');
}

/** The record ids a sheet names (ids with a colon), each once. */
export function recordIdsOf(rows: SheetRow[]): string[] {
  return [...new Set(rows.filter((r) => r.id.includes(':')).map((r) => r.id))];
}

/**
 * The sheet's rows applied to copies of the records they name (`records`: id -> collection and
 * record as it is now), in the order of the sheet. Problems (unreadable rows, unknown ids or
 * actions, attributes the schema does not have, updates that cannot apply) are one 400 listing them.
 */
export function changesOf(
  rows: SheetRow[],
  records: ReadonlyMap<string, { collection: string; doc: Doc }>,
): RecordChange[] {
  const steps = changeSteps(rows, records);
  for (;;) {
    const step = steps.next();
    if (step.done) return step.value;
  }
}

/**
 * `changesOf`, taking turns: 17,000 records planned and applied in one stretch held the event
 * loop 0.2-0.5 s.
 */
export async function changesInTurns(
  rows: SheetRow[],
  records: ReadonlyMap<string, { collection: string; doc: Doc }>,
): Promise<RecordChange[]> {
  const steps = changeSteps(rows, records);
  const turns = new Turns();
  for (;;) {
    const step = steps.next();
    if (step.done) return step.value;
    if (turns.due()) await turns.give();
  }
}

/** The work of `changesOf`, offering a pause after each record planned and each applied. */
function* changeSteps(
  rows: SheetRow[],
  records: ReadonlyMap<string, { collection: string; doc: Doc }>,
): Generator<undefined, RecordChange[]> {
  const problems = new ChangesheetProblems();
  const blocks = blocksOf(rows, problems);
  problems.throwIfAny();

  const byId = new Map<string, { collection: string; before: Doc; updates: PlannedUpdate[] }>();
  const reportedMissing = new Set<string>();
  for (const block of blocks) {
    const record = records.get(block.recordId);
    if (!record) {
      if (!reportedMissing.has(block.recordId)) {
        reportedMissing.add(block.recordId);
        problems.add(block.rows[0]!.line, 'id', `no record has the id '${block.recordId}'`);
      }
      continue;
    }
    const plan = new BlockPlanner(block, record.collection, record.doc, problems).plan();
    const entry = byId.get(block.recordId) ?? {
      collection: record.collection,
      before: record.doc,
      updates: [],
    };
    entry.updates.push(...plan.updates);
    byId.set(block.recordId, entry);
    yield;
  }
  problems.throwIfAny();

  const changes: RecordChange[] = [];
  for (const [id, { collection, before, updates }] of byId) {
    const after = structuredClone(before);
    let modified = 0;
    for (const update of updates) {
      try {
        if (applyStatement(after, update.statement)) modified++;
      } catch (err) {
        if (!(err instanceof UpdateConflict)) throw err;
        problems.add(update.line, 'attribute', `${id}: ${err.message}`);
      }
    }
    changes.push({
      id,
      collection,
      doc_before: before,
      doc_after: after,
      update_info: { n: updates.length, nModified: modified, ok: 1 },
      validation_errors: [],
      updates,
    });
    yield;
  }
  problems.throwIfAny();
  return changes;
}

export class Changesheets {
  private readonly validator: MetadataValidator;

  constructor(
    private readonly store: DocumentStore,
    private readonly writes: AtomicUpserts,
    private readonly objects: StoredObjects,
    private readonly logger: Logger,
  ) {
    this.validator = new MetadataValidator(store);
  }

  /**
   * Reads, plans, applies to copies and validates. A sheet that cannot be read or applied is a 400
   * naming each bad line; records that would break the schema are a 422 with the validator's messages.
   */
  async check(upload: SheetUpload): Promise<CheckedChangesheet> {
    const sheet = await readSheetInTurns(upload);
    const found = await this.locate(recordIdsOf(sheet.rows));
    const changes = await changesInTurns(sheet.rows, found);
    await this.validate(changes);
    return { sheet, changes };
  }

  /** Checks, keeps the sheet and applies it, all or nothing; answers the kept object. */
  async submit(upload: SheetUpload, principal: Principal): Promise<StoredObject> {
    const checked = await this.check(upload);
    const object = await this.objects.prepare({
      content: upload.content,
      name: portableName(checked.sheet.name),
      mimeType: checked.sheet.contentType,
      description: 'changesheet',
      createdBy: principal.subject,
      types: [CHANGESHEET_OBJECT_TYPE],
    });
    const changed = checked.changes.filter((c) => !sameValue(c.doc_before, c.doc_after));
    await this.ensureUnchangedSinceCheck(changed);
    const byCollection = new Map<string, Doc[]>();
    for (const change of changed) {
      const docs = byCollection.get(change.collection) ?? [];
      docs.push(change.doc_after);
      byCollection.set(change.collection, docs);
    }
    await this.writes.upsertAll([
      ...[...byCollection].map(([collection, docs]) => ({ collection, docs })),
      { collection: OBJECTS, docs: [objectRecord(object)] },
    ]);
    this.logger.info(
      { object_id: object.id, records: changed.length, by: principal.subject },
      'changesheet applied',
    );
    return object;
  }

  /** Where each id is: its typecode's collection first, then every other collection with ids. */
  private async locate(ids: string[]): Promise<Map<string, { collection: string; doc: Doc }>> {
    const found = new Map<string, { collection: string; doc: Doc }>();
    const likely = new Map<string, string[]>();
    for (const id of ids) {
      const collection = collectionOfId(id);
      if (!collection || UNIDENTIFIED_COLLECTIONS.has(collection)) continue;
      const wanted = likely.get(collection) ?? [];
      wanted.push(id);
      likely.set(collection, wanted);
    }
    const turns = new Turns();
    for (const [collection, wanted] of likely) await this.findInto(found, collection, wanted, turns);
    for (const collection of IDENTIFIED_COLLECTIONS) {
      const remaining = ids.filter((id) => !found.has(id) && collectionOfId(id) !== collection);
      if (remaining.length === 0) break;
      await this.findInto(found, collection, remaining, turns);
    }
    return found;
  }

  private async findInto(
    found: Map<string, { collection: string; doc: Doc }>,
    collection: string,
    ids: string[],
    turns = new Turns(),
  ): Promise<void> {
    for (let i = 0; i < ids.length; i += LOOKUP_BATCH) {
      // The embedded store answers synchronously: a turn between lookups when they run long.
      if (turns.due()) await turns.give();
      const docs = await this.store.find(collection, { id: { $in: ids.slice(i, i + LOOKUP_BATCH) } });
      for (const doc of docs) if (!found.has(doc.id)) found.set(doc.id, { collection, doc });
    }
  }

  /**
   * The records as they would become, validated together as one Database payload. When they fail,
   * each record is validated alone so every result carries its own messages (as the original reports).
   */
  private async validate(changes: RecordChange[]): Promise<void> {
    const payload: Record<string, Doc[]> = {};
    for (const change of changes) (payload[change.collection] ??= []).push(change.doc_after);
    const outcome = await this.validator.validateDatabase(payload);
    if (outcome.valid) return;

    const validationErrors: string[][] = [];
    for (const change of changes) {
      const alone = await this.validator.validateDatabase({ [change.collection]: [change.doc_after] });
      if (alone.valid) continue;
      change.validation_errors = Object.values(alone.detail).flat();
      validationErrors.push(change.validation_errors);
    }
    // Problems only the records together have (none are expected) are still reported.
    if (validationErrors.length === 0) validationErrors.push(Object.values(outcome.detail).flat());
    throw new Unprocessable({ update_cmd: updateCommandsOf(changes), validation_errors: validationErrors });
  }

  /**
   * A record written by someone else between the check and this write would be overwritten with a
   * change planned from its older state: refuse instead (the window left is the write itself).
   */
  private async ensureUnchangedSinceCheck(changes: RecordChange[]): Promise<void> {
    const byCollection = new Map<string, RecordChange[]>();
    for (const change of changes) {
      const list = byCollection.get(change.collection) ?? [];
      list.push(change);
      byCollection.set(change.collection, list);
    }
    for (const [collection, list] of byCollection) {
      const now = new Map<string, { collection: string; doc: Doc }>();
      await this.findInto(
        now,
        collection,
        list.map((c) => c.id),
      );
      const turns = new Turns();
      for (const change of list) {
        if (turns.due()) await turns.give();
        const current = now.get(change.id)?.doc;
        if (!current || !sameValue(current, change.doc_before)) {
          throw new Conflict(
            `The record ${change.id} changed while this changesheet was being checked; submit the changesheet again.`,
          );
        }
      }
    }
  }
}
