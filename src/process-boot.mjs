// Starts a TypeScript module as a child process's main module (its first argument, a file URL),
// with the tsx loader registered in the child only: the parent's `--import tsx` is not needed.
import { tsImport } from 'tsx/esm/api';

await tsImport(process.argv[2], import.meta.url);
