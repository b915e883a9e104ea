/**
 * The original's fixture files (tests/files/ at v2.13.0, vendored in ../files with SOURCE.md), and
 * a changesheet upload as its tests' clients send one.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { plainRequest } from './client.ts';
import { multipartBody } from './multipart.ts';
import type { WireResponse } from '../../support/wire.ts';

const FILES = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'files');

export function fixtureText(name: string): string {
  return fs.readFileSync(path.join(FILES, name), 'utf8');
}

export function fixtureJson<T = Record<string, any>>(name: string): T {
  return JSON.parse(fixtureText(name)) as T;
}

/**
 * `POST /metadata/changesheets:<verb>` with the sheet as the multipart file `uploaded_file` (its
 * type guessed from the name, as urllib3 does), and the headers given (a bearer token for submit).
 */
export async function uploadChangesheet(
  baseUrl: string,
  verb: 'validate' | 'submit',
  filename: string,
  text: string,
  headers: Record<string, string> = {},
): Promise<WireResponse> {
  const type = filename.endsWith('.csv') ? 'text/csv' : 'text/tab-separated-values';
  const { body, contentType } = multipartBody('uploaded_file', filename, text, type);
  return plainRequest(baseUrl, 'POST', `/metadata/changesheets:${verb}`, {
    raw: body,
    headers: { ...headers, 'Content-Type': contentType },
  });
}
