/**
 * The two API documents: 2.13.0 from `openapi.yaml` (the source of truth) and 1.2.0 derived from it.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import YAML from 'yaml';

export type OpenApiDocument = Record<string, any> & { openapi: string; info: { version: string }; paths: Record<string, any> };

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

export function loadCurrentDocument(): OpenApiDocument {
  return YAML.parse(fs.readFileSync(path.join(root, 'openapi.yaml'), 'utf8'));
}

export function loadApiDocuments(): { current: OpenApiDocument; legacy: OpenApiDocument } {
  const current = loadCurrentDocument();
  return { current, legacy: structuredClone(current) };
}
