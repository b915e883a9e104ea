/**
 * Chooses the DocumentStore adapter from config: MongoDB when MONGO_URL is set, embedded SQLite otherwise.
 */
import type { Logger } from 'pino';
import type { Config } from '../config.ts';
import type { DocumentStore } from './port.ts';

export async function openStore(_config: Config, _logger: Logger): Promise<DocumentStore> {
  throw new Error('not built yet');
}
