/**
 * Counts the turns the event loop takes while some work runs: work that holds the loop for its
 * whole length lets none, work that takes turns lets one after each of its slices.
 */
export async function turnsDuring<T>(work: () => Promise<T>): Promise<{ result: T; turns: number }> {
  let turns = 0;
  let counting = true;
  const tick = () => {
    if (!counting) return;
    turns++;
    setImmediate(tick);
  };
  setImmediate(tick);
  try {
    const result = await work();
    return { result, turns };
  } finally {
    counting = false;
  }
}
