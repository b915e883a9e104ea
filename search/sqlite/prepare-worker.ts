/**
 * Worker thread of a rebuild: parses records' stored JSON and prepares each batch (see
 * `prepared-batch.ts`) while the main thread writes the previous one.
 */
import { parentPort } from 'node:worker_threads';
import { prepareBatch } from './prepared-batch.ts';

parentPort!.on('message', ({ id, texts }: { id: number; texts: string[] }) => {
  try {
    const batch = prepareBatch(texts.map((t) => JSON.parse(t)));
    parentPort!.postMessage({ id, batch });
  } catch (err) {
    parentPort!.postMessage({ id, error: err instanceof Error ? err.message : String(err) });
  }
});
