/**
 * Start-up data preparation: demo data on first start of an empty embedded store.
 */
import type { AppDeps } from './http/deps.ts';

export async function prepareData(_deps: AppDeps): Promise<void> {}
