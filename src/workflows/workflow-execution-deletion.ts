/**
 * Deleting a workflow execution with everything that depends on it, as the original service does
 * (`DELETE /workflows/workflow_executions/{id}`):
 *
 * - the execution, and, recursively, every workflow execution that takes one of the data objects
 *   a deleted execution produced (`has_output`) as an input (`has_input`);
 * - the data objects the deleted executions produced (their inputs stay: others may use them);
 * - the `functional_annotation_agg` records generated (`was_generated_by`) by a deleted annotating
 *   execution (metagenome and metatranscriptome annotation, metaproteomics analysis);
 * - the jobs whose `config.activity_id` names a deleted execution.
 *
 * The cascade is worked out with reads, then deleted in one store transaction (records, search
 * index and provenance edges together on the embedded store, on its writing thread for 1,000
 * records or more: 30,000 annotation records held the event loop 0.7 s; on MongoDB a
 * transaction, the indexes following from the change log) that first checks that the execution
 * is still as it was read: if it went meanwhile, nothing is deleted (404); if it changed, nothing
 * is deleted either (409, run it again). The answer names the records the cascade found; one
 * another request deleted in between is named too. As in the original, references to the deleted
 * records from records outside the cascade are not checked.
 */
import type { Doc, DocumentStore, RecordKey } from '../store/port.ts';
import type { RecordWriter } from '../../search/writer.ts';
import { Conflict, NotFound, Unprocessable } from '../errors.ts';
import { JOBS } from './jobs.ts';
import { Turns } from '../turns.ts';

const EXECUTIONS = 'workflow_execution_set';
const DATA_OBJECTS = 'data_object_set';
const ANNOTATIONS = 'functional_annotation_agg';

/** The classes whose annotations the original aggregates in `functional_annotation_agg`. */
const ANNOTATING_TYPES: ReadonlySet<string> = new Set([
  'nmdc:MetagenomeAnnotation',
  'nmdc:MetatranscriptomeAnnotation',
  'nmdc:MetaproteomicsAnalysis',
]);

/** Records one deletion may remove: beyond, 422 (delete downstream executions first). */
export const MAX_CASCADE_RECORDS = 200_000;

/** Ids per `$in` read while working out the cascade. */
const READ_BATCH = 1000;

/** What a deletion removes (or, for a dry run, would remove), in the original's answer shape. */
export interface WorkflowExecutionCascade {
  deleted_workflow_execution_ids: string[];
  deleted_data_object_ids: string[];
  /** Store keys of the records (the original answers MongoDB ObjectIds). */
  deleted_functional_annotation_agg_oids: string[];
  deleted_job_ids: string[];
}

/** The ids a reference slot holds: a list of ids, or one id (as some writers store it). */
function idsIn(value: unknown): string[] {
  if (typeof value === 'string') return [value];
  return Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string') : [];
}

function* batches<T>(items: T[]): Iterable<T[]> {
  for (let i = 0; i < items.length; i += READ_BATCH) yield items.slice(i, i + READ_BATCH);
}

export class WorkflowExecutionDeletion {
  constructor(
    private readonly store: Pick<DocumentStore, 'getById' | 'find'>,
    private readonly writes: Pick<RecordWriter, 'writeIfUnchanged'>,
    private readonly maxRecords = MAX_CASCADE_RECORDS,
  ) {}

  /** The records deleting `id` would remove; 404 when no workflow execution has that id. */
  async cascadeOf(id: string): Promise<WorkflowExecutionCascade> {
    const target = await this.store.getById(EXECUTIONS, id, ['id', 'type', 'has_output']);
    if (!target) throw new NotFound(`Workflow execution ${id} not found`);
    const executions = [id];
    const seenExecutions = new Set(executions);
    const annotating: string[] = [];
    const outputs: string[] = [];
    const seenOutputs = new Set<string>();
    let count = 1;
    const tally = (n: number) => {
      count += n;
      if (count > this.maxRecords) {
        throw new Unprocessable(
          `Deleting workflow execution ${id} would delete more than ${this.maxRecords} records; ` +
            'delete some of its downstream workflow executions first.',
        );
      }
    };

    // Breadth first: each layer's outputs, then the executions that take any of them as input.
    let layer: Doc[] = [target];
    while (layer.length > 0) {
      const layerOutputs: string[] = [];
      for (const execution of layer) {
        if (typeof execution.type === 'string' && ANNOTATING_TYPES.has(execution.type))
          annotating.push(execution.id);
        for (const output of idsIn(execution.has_output)) {
          if (seenOutputs.has(output)) continue;
          seenOutputs.add(output);
          outputs.push(output);
          layerOutputs.push(output);
        }
      }
      const next: Doc[] = [];
      for (const chunk of batches(layerOutputs)) {
        const consumers = await this.store.find(
          EXECUTIONS,
          { has_input: { $in: chunk } },
          { projection: ['id', 'type', 'has_output'] },
        );
        for (const consumer of consumers) {
          if (seenExecutions.has(consumer.id)) continue;
          seenExecutions.add(consumer.id);
          executions.push(consumer.id);
          next.push(consumer);
        }
      }
      tally(next.length);
      layer = next;
    }

    const dataObjects = await this.existing(DATA_OBJECTS, 'id', outputs, tally);
    const annotations = await this.existing(ANNOTATIONS, 'was_generated_by', annotating, tally);
    const jobs = await this.existing(JOBS, 'config.activity_id', executions, tally);
    return {
      deleted_workflow_execution_ids: executions,
      deleted_data_object_ids: dataObjects,
      deleted_functional_annotation_agg_oids: annotations,
      deleted_job_ids: jobs,
    };
  }

  /** Deletes what `cascadeOf` finds, in one transaction; answers what was deleted. */
  async delete(id: string): Promise<WorkflowExecutionCascade> {
    // Read before the cascade is worked out from it, and checked in the write's transaction.
    const target = await this.store.getById(EXECUTIONS, id);
    if (!target) throw new NotFound(`Workflow execution ${id} not found`);
    const cascade = await this.cascadeOf(id);
    const keys = (collection: string, ids: string[]): RecordKey[] =>
      ids.map((key) => ({ collection, id: key }));
    const deletes = [
      ...keys(EXECUTIONS, cascade.deleted_workflow_execution_ids),
      ...keys(DATA_OBJECTS, cascade.deleted_data_object_ids),
      ...keys(ANNOTATIONS, cascade.deleted_functional_annotation_agg_oids),
      ...keys(JOBS, cascade.deleted_job_ids),
    ];
    const { changed } = await this.writes.writeIfUnchanged({
      expected: [{ collection: EXECUTIONS, id, doc: target }],
      writes: [],
      deletes,
    });
    if (changed < 0) return cascade;
    if ((await this.store.getById(EXECUTIONS, id, ['id'])) === null)
      throw new NotFound(`Workflow execution ${id} not found`);
    throw new Conflict(
      `Workflow execution ${id} changed while its dependents were worked out; nothing was deleted: run it again`,
    );
  }

  /**
   * Ids of the records of `collection` whose `path` holds one of `values`, each batch counted by
   * `tally` (which stops a cascade that grows too large).
   */
  private async existing(
    collection: string,
    path: string,
    values: string[],
    tally: (n: number) => void,
  ): Promise<string[]> {
    const found: string[] = [];
    const seen = new Set<string>();
    // Turns between records: a cascade of 190,000 annotation records held the event loop 0.1 s here.
    const turns = new Turns();
    for (const chunk of batches(values)) {
      const before = found.length;
      for (const doc of await this.store.find(
        collection,
        { [path]: { $in: chunk } },
        { projection: ['id'] },
      )) {
        if (turns.due()) await turns.give();
        if (seen.has(doc.id)) continue;
        seen.add(doc.id);
        found.push(doc.id);
      }
      tally(found.length - before);
    }
    // Data objects in the order the executions name them; the others in id order (found so batch
    // by batch, which the sort runs through in one pass).
    return path === 'id' ? values.filter((v) => seen.has(v)) : found.sort();
  }
}
