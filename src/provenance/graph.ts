/**
 * The provenance graph's read side: `GET /nmdcschema/linked_instances`,
 * `GET /data_objects/study/{study_id}` and `GET /workflow_executions/{id}/related_resources`,
 * answered from the edge index (never stale: it is written with the records) and the store.
 */
import { NotFound, Unprocessable, BadRequest } from '../errors.ts';
import type { Doc, DocumentStore, StateStore } from '../store/port.ts';
import {
  classAndDescendants,
  classNames,
  isClassName,
  matchingTypes,
  NAMED_THING,
} from '../schema/class-tree.ts';
import {
  MAX_PAGE_SIZE,
  checkMaxPageSize,
  loadContinuation,
  newContinuationKey,
  saveContinuation,
  tooManyForOnePage,
} from '../metadata/paging-state.ts';
import { STEP_BATCH, type EdgeIndex, type NodeInfo } from './port.ts';
import { walk, stepAll, WalkTooLarge, type Reached } from './walk.ts';

/** Most start ids one `linked_instances` request takes (the Python client sends up to 250). */
export const MAX_LINKED_IDS = 1000;

export interface LinkedInstancesParams {
  ids: string[];
  types?: string[];
  hydrate: boolean;
  max_page_size: number;
  page_token?: string;
}

export interface LinkedInstance {
  id: string;
  type: string;
  _downstream_of?: string[];
  _upstream_of?: string[];
  [field: string]: unknown;
}

type LinkedItem = LinkedInstance & { collection: string };

/** A continuation: where it is in a snapshot of the answer kept in chunks. */
interface LinkedPageState {
  scope: 'linked_instances';
  snapshot: string;
  offset: number;
  total: number;
}

/** State kind and size of the chunks a large answer is kept in between its pages. */
const SNAPSHOT_KIND = 'linked-instances';
const SNAPSHOT_CHUNK = 5000;
/** A snapshot outlives the page tokens that point into it (each token lasts 30 minutes from its page). */
const SNAPSHOT_TTL_SECONDS = 6 * 60 * 60;

/** A Python list's text (`['a', 'b']`), as the original service's messages show lists. */
export function pythonList(items: readonly string[], open = '[', close = ']'): string {
  const quote = (s: string) =>
    s.includes("'") && !s.includes('"') ? `"${s}"` : `'${s.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
  return `${open}${items.map(quote).join(', ')}${close}`;
}

function tooLarge(err: unknown, what: string): never {
  if (err instanceof WalkTooLarge)
    throw new Unprocessable(
      `${what}: ${err.message}, the most one request may walk. Ask for fewer ids at a time.`,
    );
  throw err;
}

export class ProvenanceGraph {
  constructor(
    private readonly edges: EdgeIndex,
    private readonly store: DocumentStore,
    private readonly state: StateStore,
    private readonly limits: { maxPairs?: number } = {},
  ) {}

  /** The records among `ids` that exist, in batches. */
  private async existing(ids: readonly string[]): Promise<Map<string, NodeInfo>> {
    const out = new Map<string, NodeInfo>();
    for (let i = 0; i < ids.length; i += STEP_BATCH)
      for (const n of await this.edges.nodes(ids.slice(i, i + STEP_BATCH))) out.set(n.id, n);
    return out;
  }

  /** Whole records for ids, grouped by the collection each lives in; answers in the order given. */
  async hydrate(nodes: ReadonlyArray<{ id: string; collection: string }>): Promise<Map<string, Doc>> {
    const byCollection = new Map<string, string[]>();
    for (const n of nodes) {
      let list = byCollection.get(n.collection);
      if (!list) byCollection.set(n.collection, (list = []));
      list.push(n.id);
    }
    const out = new Map<string, Doc>();
    for (const [collection, ids] of byCollection)
      for (let i = 0; i < ids.length; i += STEP_BATCH)
        for (const doc of await this.store.find(collection, { id: { $in: ids.slice(i, i + STEP_BATCH) } }))
          out.set(doc.id, doc);
    return out;
  }

  private checkTypes(types: string[]): string[] {
    const unknown = types.filter((t) => !isClassName(t));
    if (unknown.length > 0)
      throw new NotFound(
        `Some types not found: ${pythonList(unknown)}. You may need to prefix with \`nmdc:\`. ` +
          `If you don't supply any types, the set {'${NAMED_THING}'} will be used. ` +
          `Types possible: ${pythonList([...classNames()].sort(), '{', '}')}`,
      );
    return types;
  }

  /**
   * The records linked to `ids` downstream and upstream (transitively), of the given types
   * (subclasses included), in id order, paged with tokens kept in the state store. The first
   * request walks the graph once; the rest of the answer is kept in the state store in chunks, so
   * each continuation costs a page, not a walk (records are hydrated as they are when the page is
   * read).
   */
  async linkedInstances(
    params: LinkedInstancesParams,
  ): Promise<{ resources: LinkedInstance[]; next_page_token?: string }> {
    checkMaxPageSize(params.max_page_size);
    if (params.page_token !== undefined) return this.continueLinked(params);
    const ids = [...new Set(params.ids)];
    if (ids.length === 0) throw new Unprocessable('`ids`: give at least one id');
    if (ids.length > MAX_LINKED_IDS)
      throw new Unprocessable(`\`ids\`: at most ${MAX_LINKED_IDS} ids per request (${ids.length} given)`);
    const found = await this.existing(ids);
    const missing = ids.filter((id) => !found.has(id));
    if (missing.length > 0) throw new NotFound(`Some IDs not found: ${pythonList(missing)}.`);
    const types = this.checkTypes(
      params.types && params.types.length > 0 ? [...new Set(params.types)] : [NAMED_THING],
    );
    const wanted = matchingTypes(types);
    let downstream: Map<string, Reached>;
    let upstream: Map<string, Reached>;
    try {
      downstream = await walk(this.edges, ids, 'downstream', this.limits);
      upstream = await walk(this.edges, ids, 'upstream', this.limits);
    } catch (err) {
      tooLarge(err, 'linked instances');
    }
    const all = new Map<string, LinkedItem>();
    const add = (reached: Map<string, Reached>, field: '_downstream_of' | '_upstream_of') => {
      for (const [id, r] of reached) {
        if (!wanted.has(r.type)) continue;
        let item = all.get(id);
        if (!item) all.set(id, (item = { id, type: r.type, collection: r.collection }));
        item[field] = [...r.origins].sort();
      }
    };
    add(downstream, '_downstream_of');
    add(upstream, '_upstream_of');
    const sorted = [...all.values()].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    if (params.max_page_size < 1 && sorted.length > MAX_PAGE_SIZE) throw tooManyForOnePage();
    const size = params.max_page_size >= 1 ? params.max_page_size : sorted.length;
    const resources = await this.shown(sorted.slice(0, size), params.hydrate);
    if (sorted.length <= size) return { resources };
    const rest = sorted.slice(size);
    const snapshot = newContinuationKey();
    for (let i = 0; i * SNAPSHOT_CHUNK < rest.length; i++)
      await this.state.put(
        SNAPSHOT_KIND,
        `${snapshot}.${i}`,
        rest.slice(i * SNAPSHOT_CHUNK, (i + 1) * SNAPSHOT_CHUNK),
        SNAPSHOT_TTL_SECONDS,
      );
    const next_page_token = await saveContinuation<LinkedPageState>(this.state, 'page-token', {
      scope: 'linked_instances',
      snapshot,
      offset: 0,
      total: rest.length,
    });
    return { resources, next_page_token };
  }

  private async continueLinked(
    params: LinkedInstancesParams,
  ): Promise<{ resources: LinkedInstance[]; next_page_token?: string }> {
    const saved = await loadContinuation<LinkedPageState>(this.state, 'page-token', params.page_token!);
    if (!saved || saved.scope !== 'linked_instances') throw new BadRequest('`page_token` not found');
    if (params.max_page_size < 1 && saved.total - saved.offset > MAX_PAGE_SIZE) throw tooManyForOnePage();
    const end =
      params.max_page_size >= 1 ? Math.min(saved.total, saved.offset + params.max_page_size) : saved.total;
    const items: LinkedItem[] = [];
    for (let chunk = Math.floor(saved.offset / SNAPSHOT_CHUNK); chunk * SNAPSHOT_CHUNK < end; chunk++) {
      const part = await this.state.get<LinkedItem[]>(SNAPSHOT_KIND, `${saved.snapshot}.${chunk}`);
      if (!part) throw new BadRequest('`page_token` not found');
      const from = Math.max(0, saved.offset - chunk * SNAPSHOT_CHUNK);
      items.push(...part.slice(from, end - chunk * SNAPSHOT_CHUNK));
    }
    const resources = await this.shown(items, params.hydrate);
    if (end >= saved.total) return { resources };
    const next_page_token = await saveContinuation<LinkedPageState>(this.state, 'page-token', {
      ...saved,
      offset: end,
    });
    return { resources, next_page_token };
  }

  /** A page's items as answered: slim, or whole records with the two link fields. */
  private async shown(page: LinkedItem[], hydrate: boolean): Promise<LinkedInstance[]> {
    const full = hydrate ? await this.hydrate(page) : undefined;
    return page.map(({ collection: _c, ...item }) => {
      const doc = full?.get(item.id);
      return doc ? { ...doc, ...item, type: doc.type as string } : item;
    });
  }

  /**
   * For every biosample downstream of the study, the data objects downstream of it (whole
   * records), biosamples and data objects in id order; biosamples with no data object are left
   * out. Yields one group at a time so a large answer can be streamed.
   */
  async *dataObjectsForStudy(studyId: string): AsyncGenerator<{ biosample_id: string; data_objects: Doc[] }> {
    if (!(await this.store.getById('study_set', studyId, ['id']))) throw new NotFound('Study not found');
    const biosampleTypes = classAndDescendants('nmdc:Biosample');
    const dataObjectTypes = classAndDescendants('nmdc:DataObject');
    const byBiosample = new Map<string, string[]>();
    try {
      const fromStudy = await walk(this.edges, [studyId], 'downstream', this.limits);
      const biosamples = [...fromStudy].filter(([, r]) => biosampleTypes.has(r.type)).map(([id]) => id);
      const fromBiosamples = await walk(this.edges, biosamples, 'downstream', this.limits);
      for (const [id, r] of fromBiosamples) {
        if (!dataObjectTypes.has(r.type)) continue;
        for (const b of r.origins) {
          let list = byBiosample.get(b);
          if (!list) byBiosample.set(b, (list = []));
          list.push(id);
        }
      }
    } catch (err) {
      tooLarge(err, `data objects of study ${studyId}`);
    }
    const collection = 'data_object_set';
    for (const biosample of [...byBiosample.keys()].sort()) {
      const ids = byBiosample.get(biosample)!.sort();
      const docs = await this.hydrate(ids.map((id) => ({ id, collection })));
      yield { biosample_id: biosample, data_objects: ids.flatMap((id) => docs.get(id) ?? []) };
    }
  }

  /**
   * A workflow execution with its input and output data objects, the other workflow executions
   * of the same pipeline (consuming its outputs, producing its inputs, or informed by the same
   * data generation, with their data objects), the biosamples that were inputs (directly or
   * through processed samples) to the data generations that informed it, and their studies.
   */
  async relatedResources(workflowExecutionId: string): Promise<Record<string, unknown>> {
    const execution = await this.store.getById('workflow_execution_set', workflowExecutionId);
    if (!execution) throw new NotFound('Workflow execution not found');
    const list = (doc: Doc, slot: string): string[] => {
      const v = doc[slot];
      return (Array.isArray(v) ? v : v === undefined || v === null ? [] : [v]).filter(
        (x): x is string => typeof x === 'string',
      );
    };
    const WORKFLOWS = 'workflow_execution_set';
    const dataObjectIds: string[] = [];
    const executions = new Map<string, Doc>();
    const addDataObjects = (ids: string[]) => {
      for (const id of ids) if (!dataObjectIds.includes(id)) dataObjectIds.push(id);
    };
    const addExecutions = async (ids: string[]) => {
      const fresh = [...new Set(ids)].filter((id) => id !== workflowExecutionId && !executions.has(id));
      const docs = await this.hydrate(fresh.map((id) => ({ id, collection: WORKFLOWS })));
      for (const id of fresh) {
        const doc = docs.get(id);
        if (!doc) continue;
        executions.set(id, doc);
        addDataObjects([...list(doc, 'has_input'), ...list(doc, 'has_output')]);
      }
    };
    const inputs = list(execution, 'has_input');
    const outputs = list(execution, 'has_output');
    const informedBy = list(execution, 'was_informed_by');
    addDataObjects([...inputs, ...outputs]);
    const linked = async (ids: string[], direction: 'upstream' | 'downstream', slot: string) =>
      (await stepAll(this.edges, ids, direction))
        .filter((s) => s.slot === slot && s.collection === WORKFLOWS)
        .map((s) => s.to);
    await addExecutions(await linked(outputs, 'downstream', 'has_input'));
    await addExecutions(await linked(inputs, 'upstream', 'has_output'));
    await addExecutions(await linked(informedBy, 'downstream', 'was_informed_by'));

    const generationTypes = classAndDescendants('nmdc:DataGeneration');
    const generations = [...(await this.existing(informedBy)).values()].filter((n) =>
      generationTypes.has(n.type),
    );
    const generationDocs = await this.hydrate(generations);
    const biosampleIds = await this.biosamplesUpstreamOf(
      [...generationDocs.values()].flatMap((g) => list(g, 'has_input')),
    );
    const biosamples = await this.hydrate(biosampleIds.map((id) => ({ id, collection: 'biosample_set' })));
    const studyIds: string[] = [];
    const addStudies = (ids: string[]) => {
      for (const id of ids) if (!studyIds.includes(id)) studyIds.push(id);
    };
    for (const id of biosampleIds) {
      const b = biosamples.get(id);
      if (b) addStudies(list(b, 'associated_studies'));
    }
    for (const g of generationDocs.values()) addStudies(list(g, 'associated_studies'));

    const dataObjectNodes = [...(await this.existing(dataObjectIds)).values()].filter(
      (n) => n.type === 'nmdc:DataObject',
    );
    const dataObjectDocs = await this.hydrate(dataObjectNodes);
    const dataObjects = dataObjectIds.flatMap((id) => dataObjectDocs.get(id) ?? []);
    // Data objects' generating data generations name their studies too.
    const generatedBy = [...new Set(dataObjects.flatMap((d) => list(d, 'was_generated_by')))];
    const producers = [...(await this.existing(generatedBy)).values()].filter((n) =>
      generationTypes.has(n.type),
    );
    for (const g of (await this.hydrate(producers)).values()) addStudies(list(g, 'associated_studies'));
    const studies = await this.hydrate(studyIds.map((id) => ({ id, collection: 'study_set' })));

    return {
      workflow_execution_id: workflowExecutionId,
      workflow_execution: execution,
      data_objects: dataObjects,
      related_workflow_executions: [...executions.values()],
      biosamples: biosampleIds.flatMap((id) => biosamples.get(id) ?? []),
      studies: studyIds.flatMap((id) => studies.get(id) ?? []),
    };
  }

  /**
   * Biosamples reached from `starts` going up through processes: a biosample ends the path;
   * anything else leads to its own inputs and to the inputs of the processes that output it.
   */
  private async biosamplesUpstreamOf(starts: string[]): Promise<string[]> {
    const found: string[] = [];
    const seen = new Set<string>();
    let frontier = [...new Set(starts)];
    const types = new Map<string, string>();
    for (const n of (await this.existing(frontier)).values()) types.set(n.id, n.type);
    while (frontier.length > 0) {
      const next: string[] = [];
      const expand: string[] = [];
      for (const id of frontier) {
        if (seen.has(id)) continue;
        seen.add(id);
        if (types.get(id) === 'nmdc:Biosample') found.push(id);
        else expand.push(id);
      }
      const producers: string[] = [];
      for (const s of await stepAll(this.edges, expand, 'upstream')) {
        types.set(s.to, s.type);
        if (s.slot === 'has_input') next.push(s.to);
        else if (s.slot === 'has_output') producers.push(s.to);
      }
      for (const s of await stepAll(this.edges, producers, 'upstream')) {
        types.set(s.to, s.type);
        if (s.slot === 'has_input') next.push(s.to);
      }
      frontier = next.filter((id) => !seen.has(id));
    }
    return found;
  }
}
