import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const pkg = require('../package.json') as { version: string };

/** This service's own version (package.json). */
export const SERVICE_VERSION: string = pkg.version;
/** The newest API version served (the 1.2.0 document is derived from this one). */
export const API_VERSION = '2.13.0';
