/**
 * What both store adapters do to records before writing them: each must be an object with a
 * non-empty string `id`; a MongoDB `_id` that came along is dropped (the store never keeps one).
 */
import { InvalidRecord } from '../errors.ts';
import type { Doc } from './port.ts';

export function cleanDocs(docs: Doc[]): Doc[] {
  return docs.map((doc, i) => {
    if (doc === null || typeof doc !== 'object' || Array.isArray(doc))
      throw new InvalidRecord(`record ${i} is not an object`);
    if (typeof doc.id !== 'string' || doc.id === '') throw new InvalidRecord(`record ${i} has no string id`);
    if (!('_id' in doc)) return doc;
    const { _id, ...rest } = doc;
    return rest as Doc;
  });
}
