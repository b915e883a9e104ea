/**
 * The records Elasticsearch refused for good, between the writes that meet them and the meta
 * document that keeps them: a refusal is logged at once and written to the meta document with the
 * next watermark; a record refused before and written successfully since is dropped from it then.
 */
import type { Logger } from 'pino';
import type { IndexWrite } from '../port.ts';
import type { BulkOutcome } from './bulk.ts';
import { withRefusals, withoutRefusals, type IndexMeta, type MetaState, type Refusal } from './meta.ts';

export class RefusalLedger {
  /** Refusals not yet in the meta document (written with the next watermark). */
  private pendingRefusals: Refusal[] = [];
  /** Refused records since written successfully (dropped from the meta document with the next watermark). */
  private pendingCleared: Array<{ collection: string; id: string; index: string; version: number }> = [];
  /** The refusals of the last meta document read: `${index}\0${id}` -> version. */
  private knownRefused = new Map<string, number>();

  constructor(
    private readonly meta: IndexMeta,
    private readonly logger?: Logger,
  ) {}

  /** Notes refusals (logged now, written to the meta document with the next watermark) and records written since. */
  record(collection: string, write: IndexWrite, outcome: BulkOutcome): void {
    const version = write.version ?? Number.MAX_SAFE_INTEGER;
    for (const { op, index, failure } of outcome.refused) {
      this.logger?.warn(
        { collection, id: op.id, index, status: failure.status, type: failure.type, reason: failure.reason },
        'Elasticsearch refused a record: it stays a search candidate; `npm run check-index` lists it',
      );
      this.pendingRefusals.push({
        collection,
        id: op.id,
        index,
        version: write.version ?? 0,
        ...failure,
        at: new Date().toISOString(),
      });
    }
    if (write.rebuild || this.knownRefused.size === 0) return;
    for (const { op, index } of outcome.done) {
      const refused = this.knownRefused.get(`${index}\u0000${op.id}`);
      if (refused !== undefined && refused < version)
        this.pendingCleared.push({ collection, id: op.id, index, version });
    }
  }

  private remember(state: MetaState): MetaState {
    this.knownRefused = new Map(state.refused.map((r) => [`${r.index}\u0000${r.id}`, r.version]));
    return state;
  }

  /** Writes pending refusals (and clearances) to the meta document, with `change` applied too. */
  async flush(change: (m: MetaState) => MetaState = (m) => m): Promise<void> {
    const refusals = this.pendingRefusals;
    const cleared = this.pendingCleared;
    this.pendingRefusals = [];
    this.pendingCleared = [];
    try {
      this.remember(
        await this.meta.update((m) => change(withoutRefusals(withRefusals(m, refusals), cleared))),
      );
    } catch (err) {
      this.pendingRefusals.unshift(...refusals);
      this.pendingCleared.unshift(...cleared);
      throw err;
    }
  }

  /** The meta document as it is now, its refusals remembered. */
  async read(): Promise<MetaState> {
    return this.remember(await this.meta.get());
  }
}
