/**
 * Selectivity estimates from a sample: about SAMPLE_SIZE records of each collection, drawn evenly
 * across it by the store (`DocumentStore.sampleTexts`), kept for a while and drawn again when the
 * collection has grown or shrunk by a tenth. A filter's share of matches is the share of sampled
 * records it matches (the one compiled filter decides, as for every read), and so is the share
 * whose stored text passes the body test. A collection no larger than the sample is sampled
 * whole, so its estimates are exact counts.
 */
import type { DocumentStore, Filter } from '../../store/port.ts';
import { compileFilter } from '../../store/filter.ts';
import { bodyTestFunction, foldAscii, type BodyTest } from './body-prefilter.ts';
import { mapInTurns } from '../../turns.ts';

export const SAMPLE_SIZE = 2000;
const SAMPLE_TTL_MS = 10 * 60_000;
const ESTIMATE_TTL_MS = 60_000;
/** Sample texts parsed in one turn of the event loop. */
const PARSED_PER_TURN = 250;
const ESTIMATES_KEPT = 2000;

interface Sample {
  texts: string[];
  docs: Array<Record<string, unknown>>;
  /**
   * `foldAscii` of each text, folded when a body test first asks: folding the sample costs about
   * six times what testing it does, and every new filter of a collection is tested on it.
   */
  folded: Array<string | undefined>;
  /** Average length of `texts` (every plan asks for it). */
  averageBytes: number | undefined;
  /** Collection size when drawn. */
  size: number;
  at: number;
}

export interface SelectivityEstimate {
  /** Estimated matches in the collection. */
  matches: number;
  /** Estimated share of records matching (0..1). */
  selectivity: number;
  /** Estimated share of records whose stored text passes the body test (1 without one). */
  bodyTestPass: number;
  /** Sampled records and how many matched; `exact` when the sample is the whole collection. */
  sampled: number;
  hits: number;
  exact: boolean;
}

export class SelectivityEstimator {
  private readonly samples = new Map<string, Sample>();
  private readonly drawing = new Map<string, Promise<Sample>>();
  private readonly estimates = new Map<
    string,
    { sample: Sample; at: number; hits: number; passed: number }
  >();

  constructor(
    private readonly store: DocumentStore,
    private readonly sampleSize = SAMPLE_SIZE,
  ) {}

  /** True when the store can draw samples (otherwise nothing is estimated). */
  get available(): boolean {
    return typeof this.store.sampleTexts === 'function';
  }

  async estimate(
    collection: string,
    filter: Filter,
    bodyTest: BodyTest,
    collectionSize: number,
  ): Promise<SelectivityEstimate> {
    const key = `${collection}\u0000${JSON.stringify(filter)}`;
    const sample = await this.sampleOf(collection, collectionSize);
    const now = Date.now();
    // A filter's tally is kept with the sample it was taken of: a write that changes the
    // collection's size (any insert) scales the estimate, and only a new sample tallies again.
    let kept = this.estimates.get(key);
    if (!kept || kept.sample !== sample || now - kept.at >= ESTIMATE_TTL_MS) {
      kept = { sample, at: now, ...this.tally(sample, filter, bodyTest) };
      if (this.estimates.size >= ESTIMATES_KEPT) this.estimates.clear();
      this.estimates.set(key, kept);
    }
    const { hits, passed } = kept;
    const n = sample.docs.length;
    const exact = n >= collectionSize;
    // Half a hit when none was seen: "rarer than the sample can tell", never zero.
    const selectivity = n === 0 ? 1 : exact ? hits / Math.max(n, 1) : Math.max(hits, 0.5) / n;
    return {
      matches: exact ? hits : Math.round(selectivity * collectionSize),
      selectivity,
      bodyTestPass: n === 0 ? 1 : Math.max(passed, exact ? 0 : 0.5) / n,
      sampled: n,
      hits,
      exact,
    };
  }

  /** How many of the sample's records pass the body test, and how many of those match. */
  private tally(sample: Sample, filter: Filter, bodyTest: BodyTest): { hits: number; passed: number } {
    const matches = compileFilter(filter);
    const passes = bodyTestFunction(bodyTest);
    let hits = 0;
    let passed = 0;
    const { texts, folded } = sample;
    for (let i = 0; i < sample.docs.length; i++) {
      if (passes(texts[i]!, () => (folded[i] ??= foldAscii(texts[i]!)))) {
        passed++;
        if (matches(sample.docs[i]!)) hits++;
      }
    }
    return { hits, passed };
  }

  /**
   * The collection's sample, drawn again when old or when the collection changed size by a tenth.
   * A stale sample is used while the new one is drawn; concurrent callers share one drawing.
   */
  private async sampleOf(collection: string, collectionSize: number): Promise<Sample> {
    const current = this.samples.get(collection);
    const fresh =
      current !== undefined &&
      Date.now() - current.at < SAMPLE_TTL_MS &&
      Math.abs(current.size - collectionSize) <= Math.max(current.size, collectionSize) / 10 &&
      // A whole-collection sample must stay whole to stay exact.
      !(current.texts.length >= current.size && current.size !== collectionSize);
    if (fresh) return current;
    let drawing = this.drawing.get(collection);
    if (!drawing) {
      drawing = this.draw(collection, collectionSize).finally(() => this.drawing.delete(collection));
      this.drawing.set(collection, drawing);
    }
    // A small collection's sample is exact only when current: wait for it.
    if (current && collectionSize > this.sampleSize && current.texts.length < current.size) {
      drawing.catch(() => {});
      return current;
    }
    return drawing;
  }

  private async draw(collection: string, collectionSize: number): Promise<Sample> {
    const texts = await this.store.sampleTexts!(collection, this.sampleSize);
    // Parsed in turns: 2,000 texts of 2 KB take about 25 ms.
    const docs = await mapInTurns(texts, PARSED_PER_TURN, (t) => JSON.parse(t) as Record<string, unknown>);
    const sample: Sample = {
      texts,
      docs,
      folded: new Array<string | undefined>(texts.length),
      averageBytes: texts.length === 0 ? undefined : texts.reduce((n, t) => n + t.length, 0) / texts.length,
      size: Math.max(collectionSize, texts.length),
      at: Date.now(),
    };
    this.samples.set(collection, sample);
    return sample;
  }

  /** Whether a sample of the collection has been drawn (estimates from it cost no reading). */
  hasSample(collection: string): boolean {
    return this.samples.has(collection);
  }

  /** Average stored size in bytes of a collection's records, from its sample when drawn. */
  averageBytes(collection: string): number | undefined {
    return this.samples.get(collection)?.averageBytes;
  }

  /** Forgets everything (tests; a store that was rebuilt). */
  clear(): void {
    this.samples.clear();
    this.estimates.clear();
  }
}
