/**
 * The workflow catalog: capabilities, workflows, object types and triggers, kept as records of the
 * collections of the same names. At start the seed (`config/workflow-catalog.yaml`) and the
 * administrator's file (`WORKFLOW_CATALOG`) are merged by id and upserted; every reference must
 * resolve or start-up stops naming the file and entry. Also the small readers the jobs, objects
 * and triggers code uses.
 */
import fs from 'node:fs';
import { fileURLToPath } from 'node:url';
import YAML from 'yaml';
import type { Doc, DocumentStore } from '../store/port.ts';
import { ConfigError } from '../config.ts';

export const CAPABILITIES = 'capabilities';
export const WORKFLOWS = 'workflows';
export const OBJECT_TYPES = 'object_types';
export const TRIGGERS = 'triggers';

/** The catalog every instance starts with. */
export const SEED_CATALOG_FILE = fileURLToPath(
  new URL('../../config/workflow-catalog.yaml', import.meta.url),
);

export interface CapabilityRecord {
  id: string;
  name: string | null;
  description: string | null;
  created_at: string;
}

export interface WorkflowRecord {
  id: string;
  name: string | null;
  description: string | null;
  /** Capabilities a site must hold to claim this workflow's jobs (none: any site). */
  capability_ids: string[];
  created_at: string;
}

export interface ObjectTypeRecord {
  id: string;
  name: string | null;
  description: string | null;
  created_at: string;
}

/** When an object gains the type `object_type_id`, a job of `workflow_id` is created for it. */
export interface TriggerRecord {
  id: string;
  object_type_id: string;
  workflow_id: string;
  created_at: string;
}

type Section = 'capabilities' | 'workflows' | 'object_types' | 'triggers';

/** Each section of a catalog file: its collection and the fields an entry may carry. */
const SECTIONS: Record<Section, { collection: string; fields: string[] }> = {
  capabilities: { collection: CAPABILITIES, fields: ['id', 'name', 'description', 'created_at'] },
  workflows: {
    collection: WORKFLOWS,
    fields: ['id', 'name', 'description', 'capability_ids', 'created_at'],
  },
  object_types: { collection: OBJECT_TYPES, fields: ['id', 'name', 'description', 'created_at'] },
  triggers: { collection: TRIGGERS, fields: ['id', 'object_type_id', 'workflow_id', 'created_at'] },
};
const SECTION_NAMES = Object.keys(SECTIONS) as Section[];

/** RFC 3339 date-time with a zone, as the API's `created_at` fields are. */
const DATE_TIME = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$/i;

/** A problem with a catalog file, naming the file and the entry. */
export class CatalogFileError extends Error {}

/** One entry as a file gives it, with where it came from (for messages). */
interface FileEntry {
  file: string;
  /** `triggers[3] (metadata-in--metadata-in-1.0.0)` */
  where: string;
  fields: Record<string, unknown>;
}

type ParsedCatalog = Record<Section, Map<string, FileEntry>>;

/** What a catalog file says, checked for shape (references are checked after merging). */
export function readCatalogFile(file: string): ParsedCatalog {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (err) {
    throw new CatalogFileError(`${file}: cannot be read: ${(err as Error).message}`);
  }
  let parsed: unknown;
  try {
    // YAML 1.2 reads JSON too.
    parsed = YAML.parse(text);
  } catch (err) {
    throw new CatalogFileError(`${file}: is neither YAML nor JSON: ${(err as Error).message}`);
  }
  if (parsed === null || parsed === undefined) parsed = {};
  if (typeof parsed !== 'object' || Array.isArray(parsed)) {
    throw new CatalogFileError(`${file}: must be a mapping of ${SECTION_NAMES.join(', ')}`);
  }
  const top = parsed as Record<string, unknown>;
  for (const key of Object.keys(top)) {
    if (!(SECTION_NAMES as string[]).includes(key))
      throw new CatalogFileError(
        `${file}: unknown section '${key}' (the sections are ${SECTION_NAMES.join(', ')})`,
      );
  }
  const catalog = {} as ParsedCatalog;
  for (const section of SECTION_NAMES) {
    catalog[section] = new Map();
    const entries = top[section] ?? [];
    if (!Array.isArray(entries)) throw new CatalogFileError(`${file}: ${section} must be a list`);
    entries.forEach((raw: unknown, index) => {
      const entry = checkedEntry(file, section, index, raw);
      const id = entry.fields.id as string;
      if (catalog[section].has(id))
        throw new CatalogFileError(`${file}: ${entry.where}: the id '${id}' appears twice in ${section}`);
      catalog[section].set(id, entry);
    });
  }
  return catalog;
}

function checkedEntry(file: string, section: Section, index: number, raw: unknown): FileEntry {
  const at = `${section}[${index}]`;
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw))
    throw new CatalogFileError(`${file}: ${at}: must be a mapping`);
  const fields = { ...(raw as Record<string, unknown>) };
  if (section === 'triggers' && fields.id === undefined) {
    // The original's trigger ids.
    if (typeof fields.object_type_id === 'string' && typeof fields.workflow_id === 'string')
      fields.id = `${fields.object_type_id}--${fields.workflow_id}`;
  }
  const where = typeof fields.id === 'string' ? `${at} (${fields.id})` : at;
  const problem = (message: string) => new CatalogFileError(`${file}: ${where}: ${message}`);
  for (const key of Object.keys(fields)) {
    if (!SECTIONS[section].fields.includes(key))
      throw problem(`unknown field '${key}' (allowed: ${SECTIONS[section].fields.join(', ')})`);
  }
  const required = section === 'triggers' ? ['id', 'object_type_id', 'workflow_id'] : ['id'];
  for (const key of required) {
    if (typeof fields[key] !== 'string' || (fields[key] as string).length === 0)
      throw problem(`${key} must be a non-empty string`);
  }
  for (const key of ['name', 'description']) {
    if (fields[key] !== undefined && fields[key] !== null && typeof fields[key] !== 'string')
      throw problem(`${key} must be a string`);
  }
  if (fields.capability_ids !== undefined) {
    const ids = fields.capability_ids;
    if (!Array.isArray(ids) || !ids.every((id) => typeof id === 'string' && id.length > 0))
      throw problem('capability_ids must be a list of capability ids');
    fields.capability_ids = [...new Set(ids as string[])];
  }
  if (fields.created_at !== undefined) {
    // A YAML 1.1 file may give timestamps as dates.
    const value = fields.created_at instanceof Date ? fields.created_at.toISOString() : fields.created_at;
    if (typeof value !== 'string' || !DATE_TIME.test(value) || Number.isNaN(Date.parse(value)))
      throw problem('created_at must be a date-time with a time zone, e.g. 2021-06-01T00:00:00Z');
    fields.created_at = value;
  }
  return { file, where, fields };
}

/**
 * `extra` over `base`, by id and field by field: an entry of `extra` changes only the fields it
 * gives. Each merged entry keeps the place of the file that gave it last (for messages).
 */
export function mergeCatalogs(base: ParsedCatalog, extra: ParsedCatalog): ParsedCatalog {
  const merged = {} as ParsedCatalog;
  for (const section of SECTION_NAMES) {
    merged[section] = new Map(base[section]);
    for (const [id, entry] of extra[section]) {
      const under = merged[section].get(id);
      merged[section].set(id, under ? { ...entry, fields: { ...under.fields, ...entry.fields } } : entry);
    }
  }
  return merged;
}

/** Every workflow's capabilities, every trigger's workflow and object type exist in the catalog. */
function checkReferences(catalog: ParsedCatalog): void {
  const refuse = (entry: FileEntry, message: string) => {
    throw new CatalogFileError(`${entry.file}: ${entry.where}: ${message}`);
  };
  for (const entry of catalog.workflows.values()) {
    const unknown = ((entry.fields.capability_ids as string[] | undefined) ?? []).filter(
      (id) => !catalog.capabilities.has(id),
    );
    if (unknown.length > 0) refuse(entry, `names unknown capabilities: ${unknown.join(', ')}`);
  }
  for (const entry of catalog.triggers.values()) {
    const { workflow_id, object_type_id } = entry.fields as { workflow_id: string; object_type_id: string };
    if (!catalog.workflows.has(workflow_id)) refuse(entry, `names an unknown workflow '${workflow_id}'`);
    if (!catalog.object_types.has(object_type_id))
      refuse(entry, `names an unknown object type '${object_type_id}'`);
  }
}

/** The record a merged entry becomes; `created_at` is the stored one, else the file's, else now. */
function recordOf(
  section: Section,
  fields: Record<string, unknown>,
  stored: Doc | undefined,
  now: string,
): Doc {
  const created_at =
    typeof stored?.created_at === 'string' ? stored.created_at : ((fields.created_at as string) ?? now);
  const id = fields.id as string;
  if (section === 'triggers')
    return { id, object_type_id: fields.object_type_id, workflow_id: fields.workflow_id, created_at };
  const described = { id, name: fields.name ?? null, description: fields.description ?? null };
  if (section === 'workflows')
    return {
      ...described,
      capability_ids: (fields.capability_ids as string[] | undefined) ?? [],
      created_at,
    };
  return { ...described, created_at };
}

function sameRecord(a: Doc, b: Doc): boolean {
  const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
  for (const key of keys) if (JSON.stringify(a[key]) !== JSON.stringify(b[key])) return false;
  return true;
}

export type CatalogCounts = Record<Section, { entries: number; written: number }>;

/**
 * Upserts the seed catalog and the administrator's file (`extraFile`, WORKFLOW_CATALOG) merged
 * over it. Records that already read the same are not rewritten; records are never removed (an
 * entry dropped from a file stays, as in the original). A problem with the administrator's file
 * is a ConfigError naming WORKFLOW_CATALOG; one with the seed, a CatalogFileError.
 */
export async function ensureCatalog(
  store: Pick<DocumentStore, 'find' | 'upsertMany'>,
  extraFile?: string,
  seedFile: string = SEED_CATALOG_FILE,
): Promise<CatalogCounts> {
  let catalog = readCatalogFile(seedFile);
  if (extraFile) {
    try {
      catalog = mergeCatalogs(catalog, readCatalogFile(extraFile));
      checkReferences(catalog);
    } catch (err) {
      if (err instanceof CatalogFileError) throw new ConfigError(`WORKFLOW_CATALOG: ${err.message}`);
      throw err;
    }
  } else {
    checkReferences(catalog);
  }

  const now = new Date().toISOString();
  const counts = {} as CatalogCounts;
  for (const section of SECTION_NAMES) {
    const { collection } = SECTIONS[section];
    const ids = [...catalog[section].keys()];
    const stored = new Map((await store.find(collection, { id: { $in: ids } })).map((d) => [d.id, d]));
    const changed: Doc[] = [];
    for (const entry of catalog[section].values()) {
      const before = stored.get(entry.fields.id as string);
      const record = recordOf(section, entry.fields, before, now);
      if (!before || !sameRecord(before, record)) changed.push(record);
    }
    if (changed.length > 0) await store.upsertMany(collection, changed);
    counts[section] = { entries: ids.length, written: changed.length };
  }
  return counts;
}

type CatalogReader = Pick<DocumentStore, 'getById'>;

export async function getCapability(store: CatalogReader, id: string): Promise<CapabilityRecord | null> {
  return (await store.getById(CAPABILITIES, id)) as unknown as CapabilityRecord | null;
}

export async function getWorkflow(store: CatalogReader, id: string): Promise<WorkflowRecord | null> {
  return (await store.getById(WORKFLOWS, id)) as unknown as WorkflowRecord | null;
}

export async function getObjectType(store: CatalogReader, id: string): Promise<ObjectTypeRecord | null> {
  return (await store.getById(OBJECT_TYPES, id)) as unknown as ObjectTypeRecord | null;
}

export async function getTrigger(store: CatalogReader, id: string): Promise<TriggerRecord | null> {
  return (await store.getById(TRIGGERS, id)) as unknown as TriggerRecord | null;
}

/** The triggers that fire when an object gains the type `typeId`, in id order. */
export async function triggersForObjectType(
  store: Pick<DocumentStore, 'find'>,
  typeId: string,
): Promise<TriggerRecord[]> {
  return (await store.find(TRIGGERS, { object_type_id: typeId })) as unknown as TriggerRecord[];
}

/** The triggers that start `workflowId`, in id order. */
export async function triggersForWorkflow(
  store: Pick<DocumentStore, 'find'>,
  workflowId: string,
): Promise<TriggerRecord[]> {
  return (await store.find(TRIGGERS, { workflow_id: workflowId })) as unknown as TriggerRecord[];
}
