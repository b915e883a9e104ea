/**
 * Work on large buffers in turns of the event loop, so that other requests are answered meanwhile.
 */

/** Resolves in the next turn of the event loop, after the I/O waiting now. */
export function nextTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/** Bytes copied per turn by `concatInTurns`. */
const COPIED_PER_TURN = 8 * 1024 * 1024;

/**
 * `Buffer.concat(parts)`, copied COPIED_PER_TURN bytes or so a turn: one concat of 142 MB held the
 * event loop for 100-300 ms here.
 */
export async function concatInTurns(parts: Buffer[]): Promise<Buffer> {
  const total = parts.reduce((n, part) => n + part.length, 0);
  const whole = Buffer.allocUnsafe(total);
  let at = 0;
  let copied = 0;
  for (const part of parts) {
    part.copy(whole, at);
    at += part.length;
    copied += part.length;
    if (copied >= COPIED_PER_TURN) {
      copied = 0;
      await nextTurn();
    }
  }
  return whole;
}
