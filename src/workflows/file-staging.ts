/**
 * File staging records of the workflow automation (the original's `wf_file_staging` models): Globus
 * transfer tasks, JGI samples (files restored from the JGI Data Portal's tape) and JGI sequencing
 * projects. Each kind lives in its own DocumentStore collection keyed by the field the original looks
 * records up by (`task_id`, `jdp_file_id`, `sequencing_project_name`): the store's `id` is that key,
 * so a duplicate create is refused atomically across processes. Bodies are read as the original's
 * pydantic models read them: only the model's fields are kept, strings must be strings, integers may
 * come as integer text, date-times are ISO 8601 (stored in UTC, `Z`).
 */
import type { Doc, DocumentStore, Filter } from '../store/port.ts';
import { BadRequest, Conflict, NotFound, Unprocessable } from '../errors.ts';
import { guardFilter, parseJsonFilter } from '../query/guard/index.ts';

type FieldType = 'string' | 'integer' | 'date-time';

interface FieldRule {
  type: FieldType;
  /** Optional fields default to null in the original's models. */
  optional?: boolean;
}

export interface StagingKind {
  /** Names the kind in messages, as the original does. */
  label: string;
  collection: string;
  /** The field records are looked up by (and keyed by in the store). */
  key: string;
  fields: Record<string, FieldRule>;
  /** Whether a create stores optional fields the body left out (as null), like `model_dump()`. */
  storesUnsetFields: boolean;
  /** The 400 detail when a patch body's key differs from the path's (the original's words). */
  keyMismatch: string;
}

export const GLOBUS_TASKS: StagingKind = {
  label: 'Globus task',
  collection: 'wf_file_staging.globus_tasks',
  key: 'task_id',
  fields: { task_id: { type: 'string' }, task_status: { type: 'string' } },
  storesUnsetFields: true,
  keyMismatch: 'task_id in path and body must match.',
};

export const JGI_SAMPLES: StagingKind = {
  label: 'JGI sample',
  collection: 'wf_file_staging.jgi_samples',
  key: 'jdp_file_id',
  fields: {
    jdp_file_id: { type: 'string' },
    ap_gold_id: { type: 'string' },
    gold_study_id: { type: 'string' },
    its_ap_id: { type: 'string' },
    sequencing_project_name: { type: 'string' },
    gold_biosample_id: { type: 'string' },
    gold_seq_id: { type: 'string' },
    file_name: { type: 'string' },
    jdp_file_status: { type: 'string' },
    globus_file_status: { type: 'string' },
    jdp_file_size: { type: 'integer' },
    md5sum: { type: 'string', optional: true },
    jgi_ap_id: { type: 'string' },
    create_date: { type: 'date-time' },
    update_date: { type: 'date-time', optional: true },
    request_id: { type: 'integer' },
  },
  // The original creates samples with `model_dump(exclude_unset=True)`.
  storesUnsetFields: false,
  keyMismatch: 'Cannot modify jdp_file_id (jdp_file_id in path and body must match).',
};

export const JGI_SEQUENCING_PROJECTS: StagingKind = {
  label: 'JGISequencingProject',
  collection: 'wf_file_staging.jgi_sequencing_projects',
  key: 'sequencing_project_name',
  fields: {
    sequencing_project_name: { type: 'string' },
    sequencing_project_description: { type: 'string' },
    jgi_proposal_id: { type: 'string' },
    nmdc_study_id: { type: 'string' },
  },
  storesUnsetFields: true,
  keyMismatch: 'sequencing_project_name in path and body must match.',
};

/** The status words the original knows (others are kept, as the original only logs them). */
export const GLOBUS_TASK_STATUSES = [
  'ACTIVE',
  'INACTIVE',
  'SUCCEEDED',
  'FAILED',
  'PENDING',
  'IN_PROGRESS',
  'COMPLETED',
];
export const JDP_FILE_STATUSES = ['RESTORED', 'PURGED', 'READY', 'EXPIRED'];

const ISO_DATE_TIME =
  /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(\.\d{1,9})?)?(Z|z|[+-]\d{2}(?::?\d{2})?)?)?$/;

/** An ISO 8601 date or date-time as UTC text (`2023-01-01T00:00:00Z`); no offset means UTC. */
function utcDateTime(value: unknown): string | undefined {
  let date: Date;
  if (typeof value === 'number' && Number.isFinite(value)) {
    date = new Date(value * 1000);
  } else if (typeof value === 'string') {
    const m = ISO_DATE_TIME.exec(value.trim());
    if (!m) return undefined;
    const [, y, mo, d, h = '00', mi = '00', s = '00', fraction = '', offset = 'Z'] = m;
    const ms = fraction ? fraction.slice(0, 4).padEnd(4, '0') : '';
    const zone =
      offset.length === 3
        ? `${offset}:00`
        : offset.length === 5
          ? `${offset.slice(0, 3)}:${offset.slice(3)}`
          : offset.toUpperCase();
    date = new Date(`${y}-${mo}-${d}T${h}:${mi}:${s}${ms}${zone}`);
  } else {
    return undefined;
  }
  if (Number.isNaN(date.getTime())) return undefined;
  return date.toISOString().replace('.000Z', 'Z');
}

/** The field's value as stored, or a problem description. */
function fieldValue(rule: FieldRule, value: unknown): { value: unknown } | { problem: string } {
  if (value === null) return rule.optional ? { value: null } : { problem: 'must not be null' };
  switch (rule.type) {
    case 'string':
      return typeof value === 'string' ? { value } : { problem: 'must be a string' };
    case 'integer':
      if (typeof value === 'number' && Number.isSafeInteger(value)) return { value };
      if (typeof value === 'string' && /^\s*[+-]?\d{1,15}\s*$/.test(value)) return { value: Number(value) };
      return { problem: 'must be an integer' };
    case 'date-time': {
      const text = utcDateTime(value);
      return text === undefined
        ? { problem: 'must be an ISO 8601 date-time, e.g. 2023-01-01T00:00:00Z' }
        : { value: text };
    }
  }
}

/**
 * The model's fields of `body`, checked. `partial`: a patch, where every field may be left out;
 * otherwise a create, where required fields must be present. Other fields are dropped, as the
 * original's models drop them.
 */
export function readStagingBody(kind: StagingKind, body: unknown, partial: boolean): Record<string, unknown> {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw new Unprocessable(`The body must be a JSON object: a ${kind.label}`);
  }
  const given = body as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  const problems: string[] = [];
  for (const [name, rule] of Object.entries(kind.fields)) {
    if (!(name in given) || given[name] === undefined) {
      if (!partial && !rule.optional) problems.push(`${name}: is required`);
      else if (!partial && kind.storesUnsetFields) out[name] = null;
      continue;
    }
    const read = fieldValue(rule, given[name]);
    if ('problem' in read) problems.push(`${name}: ${read.problem}`);
    else out[name] = read.value;
  }
  if (problems.length > 0) throw new Unprocessable(`Invalid ${kind.label}: ${problems.join('; ')}`);
  if (out[kind.key] === '') throw new Unprocessable(`Invalid ${kind.label}: ${kind.key}: must not be empty`);
  return out;
}

/** A stored record as the API answers it: the store's `id` (a copy of the key) left out. */
export function publicStagingRecord(record: Doc): Record<string, unknown> {
  const { id: _id, ...shown } = record;
  return shown;
}

/**
 * A listing's `filter` as the clients send it: absent, JSON `null` (nmdc_api_utilities sends
 * `json.dumps(None)`), a JSON object, or a JSON string holding the JSON object (what its list
 * methods send when given the filter as text, as their signatures ask).
 */
export function stagingFilter(text: string | undefined): Filter {
  if (text === undefined) return {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return parseJsonFilter(text);
  }
  if (parsed === null) return {};
  if (typeof parsed === 'string')
    return parsed.trim() === '' || parsed === 'null' ? {} : parseJsonFilter(parsed);
  return guardFilter(parsed);
}

export class StagingRecords {
  constructor(
    private readonly store: DocumentStore,
    readonly kind: StagingKind,
  ) {}

  /** Stores a new record; 409 when one with its key exists. */
  async create(fields: Record<string, unknown>): Promise<Doc> {
    const key = fields[this.kind.key] as string;
    const record: Doc = { ...fields, id: key };
    if (!(await this.store.insertIfAbsent(this.kind.collection, record))) {
      throw new Conflict(`${this.kind.label} with ${this.kind.key} ${key} already exists.`);
    }
    return record;
  }

  async get(key: string): Promise<Doc> {
    const record = await this.store.getById(this.kind.collection, key);
    if (!record) throw new NotFound(`No ${this.kind.label} with ${this.kind.key} ${key}`);
    return record;
  }

  /** Merges `fields` into the record at `key`, atomically; 400 when the body names another key. */
  async patch(key: string, fields: Record<string, unknown>): Promise<Doc> {
    if (this.kind.key in fields && fields[this.kind.key] !== key) throw new BadRequest(this.kind.keyMismatch);
    return this.store.readModifyWrite([{ collection: this.kind.collection, id: key }], ([current]) => {
      if (!current) throw new NotFound(`No ${this.kind.label} with ${this.kind.key} ${key}`);
      const patched: Doc = { ...current, ...fields, id: key };
      return { writes: [{ collection: this.kind.collection, docs: [patched] }], value: patched };
    });
  }

  find(filter: Filter, page: { projection?: string[]; afterId?: string; limit?: number }): Promise<Doc[]> {
    return this.store.find(this.kind.collection, filter, page);
  }
}
