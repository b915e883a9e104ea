/**
 * The search index's own state in Elasticsearch, one document read and written as a whole: the
 * freshness watermark, the collections that have an index, and the records Elasticsearch refused.
 * Every process reads it in real time (`GET`) and changes it by compare-and-set (`if_seq_no`), so
 * the watermark only moves forward and refusals are written in the same step that moves it past
 * them: a reader never sees a watermark beyond a record it is not told about.
 */
import type { Client } from '@elastic/elasticsearch';
import type { IndexRefusal } from '../port.ts';
import { statusOf } from './client.ts';

/** A record Elasticsearch refused for good (a mapping or size limit): it stays a search candidate. */
export interface Refusal extends IndexRefusal {
  /** The concrete index that refused it. */
  index: string;
  /** The version (change sequence) of the refused write. */
  version: number;
}

export interface MetaState {
  /** Every change up to this sequence is indexed (refused records aside). */
  seq: number;
  /** Collections that have had an index: one missing later was lost, not never made. */
  collections: string[];
  refused: Refusal[];
  /** Collections with more refusals than are kept: their index cannot narrow until rebuilt. */
  overflow: string[];
}

/** Refusals kept at most; past it a collection is marked `overflow`. */
export const MAX_REFUSALS = 10_000;

const DOC_ID = 'watermark';

const EMPTY: MetaState = { seq: 0, collections: [], refused: [], overflow: [] };

export const META_MAPPINGS = { dynamic: false, properties: { seq: { type: 'long' } } };

function stateOf(source: Partial<MetaState> | undefined): MetaState {
  return {
    seq: Number(source?.seq ?? 0),
    collections: source?.collections ?? [],
    refused: source?.refused ?? [],
    overflow: source?.overflow ?? [],
  };
}

export class IndexMeta {
  private created = false;

  constructor(
    private readonly client: Client,
    readonly index: string,
  ) {}

  private async read(): Promise<{ state: MetaState; seqNo?: number; primaryTerm?: number }> {
    try {
      const res = await this.client.get<Partial<MetaState>>({ index: this.index, id: DOC_ID });
      return { state: stateOf(res._source), seqNo: res._seq_no, primaryTerm: res._primary_term };
    } catch (err) {
      if (statusOf(err) === 404) return { state: { ...EMPTY } };
      throw err;
    }
  }

  async get(): Promise<MetaState> {
    return (await this.read()).state;
  }

  private async ensureIndex(): Promise<void> {
    if (this.created) return;
    if (!(await this.client.indices.exists({ index: this.index }))) {
      try {
        await this.client.indices.create({ index: this.index, mappings: META_MAPPINGS as never });
      } catch (err) {
        if (statusOf(err) !== 400) throw err; // another process created it first
      }
    }
    this.created = true;
  }

  /**
   * Applies `change` to the current state and writes it if it changed, retrying when another
   * process wrote in between. Returns the state written (or found unchanged).
   */
  async update(change: (state: MetaState) => MetaState): Promise<MetaState> {
    await this.ensureIndex();
    for (let attempt = 0; ; attempt++) {
      const { state, seqNo, primaryTerm } = await this.read();
      const next = change(structuredClone(state));
      if (JSON.stringify(next) === JSON.stringify(state)) return state;
      try {
        await this.client.index({
          index: this.index,
          id: DOC_ID,
          document: next,
          ...(seqNo === undefined
            ? { op_type: 'create' as const }
            : { if_seq_no: seqNo, if_primary_term: primaryTerm }),
        });
        return next;
      } catch (err) {
        if (statusOf(err) !== 409 || attempt >= 50) throw err;
        await new Promise((r) => setTimeout(r, Math.random() * 20 * Math.min(attempt + 1, 10)));
      }
    }
  }
}

/** Adds refusals (one per collection, id and index, the highest version kept), within MAX_REFUSALS. */
export function withRefusals(state: MetaState, added: Refusal[]): MetaState {
  const key = (r: Refusal) => `${r.collection}\u0000${r.id}\u0000${r.index}`;
  const byKey = new Map(state.refused.map((r) => [key(r), r]));
  for (const r of added) {
    const existing = byKey.get(key(r));
    if (existing) {
      if (r.version >= existing.version) byKey.set(key(r), r);
    } else if (byKey.size < MAX_REFUSALS) byKey.set(key(r), r);
    else if (!state.overflow.includes(r.collection)) state.overflow.push(r.collection);
  }
  return { ...state, refused: [...byKey.values()] };
}

/** Drops refusals of records since written to the same index with a higher version. */
export function withoutRefusals(
  state: MetaState,
  cleared: Array<{ collection: string; id: string; index: string; version: number }>,
): MetaState {
  if (cleared.length === 0) return state;
  const newest = new Map<string, number>();
  for (const c of cleared) {
    const key = `${c.collection}\u0000${c.id}\u0000${c.index}`;
    newest.set(key, Math.max(newest.get(key) ?? -Infinity, c.version));
  }
  return {
    ...state,
    refused: state.refused.filter(
      (r) => !(r.version < (newest.get(`${r.collection}\u0000${r.id}\u0000${r.index}`) ?? -Infinity)),
    ),
  };
}
