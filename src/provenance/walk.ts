/**
 * Breadth-first walks over the edge index, from many start ids at once, remembering for every
 * record met which start ids it was reached from (its origins). Each level is asked of the index
 * in batches of `STEP_BATCH` ids, and the event loop gets a turn after every batch, so a walk over
 * a study with 10^5 records never holds other requests up for more than one batch. The work is
 * capped: a walk that would record more than `maxPairs` (record, origin) pairs stops with
 * `WalkTooLarge` instead of growing without bound.
 */
import { setImmediate as nextTurn } from 'node:timers/promises';
import { STEP_BATCH, type Direction, type EdgeIndex, type Step } from './port.ts';

/** Default cap on (record, origin) pairs one walk may record. */
export const MAX_WALK_PAIRS = 400_000;

export class WalkTooLarge extends Error {
  constructor(readonly limit: number) {
    super(`the walk reaches more than ${limit.toLocaleString('en-US')} (record, start id) pairs`);
  }
}

export interface Reached {
  type: string;
  collection: string;
  /** The start ids this record is reached from. */
  origins: Set<string>;
}

export interface WalkOptions {
  maxPairs?: number;
  /** Only edges of these slots are followed (default: every directed reference slot). */
  slots?: ReadonlySet<string>;
}

/** Runs `step` over `ids` in batches, giving the event loop a turn between them. */
export async function stepAll(
  index: EdgeIndex,
  ids: readonly string[],
  direction: Direction,
): Promise<Step[]> {
  const out: Step[] = [];
  for (let i = 0; i < ids.length; i += STEP_BATCH) {
    const steps = await index.step(ids.slice(i, i + STEP_BATCH), direction);
    for (const s of steps) out.push(s);
    await nextTurn();
  }
  return out;
}

/**
 * Every existing record reachable from `starts` along `direction` (one or more steps), with its
 * origins. A start id is in the answer only when another start id (or a cycle) leads to it.
 */
export async function walk(
  index: EdgeIndex,
  starts: readonly string[],
  direction: Direction,
  options: WalkOptions = {},
): Promise<Map<string, Reached>> {
  const maxPairs = options.maxPairs ?? MAX_WALK_PAIRS;
  if (starts.length === 1) return walkFromOne(index, starts[0]!, direction, maxPairs, options.slots);
  const reached = new Map<string, Reached>();
  let pairs = 0;
  // Each frontier entry carries the origins that are new to it since it was last expanded.
  let frontier = new Map<string, Set<string>>(starts.map((id) => [id, new Set([id])]));
  while (frontier.size > 0) {
    const next = new Map<string, Set<string>>();
    const ids = [...frontier.keys()];
    for (let i = 0; i < ids.length; i += STEP_BATCH) {
      const steps = await index.step(ids.slice(i, i + STEP_BATCH), direction);
      for (const { from, to, slot, type, collection } of steps) {
        if (options.slots && !options.slots.has(slot)) continue;
        const delta = frontier.get(from)!;
        let entry = reached.get(to);
        if (!entry) reached.set(to, (entry = { type, collection, origins: new Set() }));
        for (const origin of delta) {
          if (entry.origins.has(origin)) continue;
          entry.origins.add(origin);
          pairs++;
          let pending = next.get(to);
          if (!pending) next.set(to, (pending = new Set()));
          pending.add(origin);
        }
      }
      if (pairs > maxPairs) throw new WalkTooLarge(maxPairs);
      await nextTurn();
    }
    frontier = next;
  }
  return reached;
}

/** `walk` from one start id: every record met has that one origin, so a plain visited map does. */
async function walkFromOne(
  index: EdgeIndex,
  start: string,
  direction: Direction,
  maxPairs: number,
  slots: ReadonlySet<string> | undefined,
): Promise<Map<string, Reached>> {
  const origins = new Set([start]);
  const reached = new Map<string, Reached>();
  let frontier = [start];
  while (frontier.length > 0) {
    const next: string[] = [];
    for (let i = 0; i < frontier.length; i += STEP_BATCH) {
      for (const { to, slot, type, collection } of await index.step(
        frontier.slice(i, i + STEP_BATCH),
        direction,
      )) {
        if ((slots && !slots.has(slot)) || reached.has(to)) continue;
        reached.set(to, { type, collection, origins });
        next.push(to);
      }
      if (reached.size > maxPairs) throw new WalkTooLarge(maxPairs);
      await nextTurn();
    }
    frontier = next;
  }
  return reached;
}
