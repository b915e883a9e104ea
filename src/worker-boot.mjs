// Starts a TypeScript worker module: worker threads do not inherit the tsx loader of the process.
import { workerData } from 'node:worker_threads';
import { tsImport } from 'tsx/esm/api';

await tsImport(workerData.module, import.meta.url);
