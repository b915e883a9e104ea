import path from 'node:path';

/** The embedded store's database file in a data folder. */
export function embeddedStoreFile(dataDir: string): string {
  return path.join(dataDir, 'nmdc.sqlite');
}
