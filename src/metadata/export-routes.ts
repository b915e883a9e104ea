/**
 * `GET /export/{collection_name}`: a collection, or the records matching a JSON filter, streamed
 * as NDJSON, a JSON array, CSV or TSV, chosen by `format` or else by `Accept` (NDJSON when either
 * allows anything). Everything that can be refused is refused before the first byte; a failure
 * while streaming ends the connection without the final chunk, so clients see an incomplete answer.
 */
import type { Request, Response } from 'express';
import { NotAcceptable } from '../errors.ts';
import { parseFieldList } from '../query/compact.ts';
import { parseJsonFilter } from '../query/guard/index.ts';
import { queryText } from '../http/request-reading/values.ts';
import { checkCollectionName } from './schema-endpoints.ts';
import {
  EXPORT_FORMATS,
  EXPORT_MEDIA_TYPES,
  type ExportFormat,
  type ExportSink,
  type Exporter,
} from './export.ts';

/** The format asked for: the `format` parameter, else the best `Accept` match (406 when none). */
export function exportFormat(req: Request): ExportFormat {
  const named = queryText(req.query.format);
  if (named !== undefined) return named as ExportFormat; // the contract's enum checked it
  const byType = new Map<string, ExportFormat>();
  for (const format of EXPORT_FORMATS)
    for (const type of EXPORT_MEDIA_TYPES[format].accepted) byType.set(type, format);
  const chosen = req.accepts([...byType.keys()]);
  if (!chosen) {
    throw new NotAcceptable(
      `None of the media types in Accept can be answered; use ${[...byType.keys()].join(', ')}, or format=${EXPORT_FORMATS.join('|')}`,
    );
  }
  return byType.get(chosen)!;
}

class ClientGone extends Error {}

/** Writes to the response, resolving when it can take more (backpressure); rejects once the client is gone. */
function responseSink(res: Response): ExportSink {
  return (chunk) => {
    if (res.destroyed || res.writableEnded) return Promise.reject(new ClientGone());
    if (res.write(chunk)) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      const done = (gone: boolean) => {
        res.off('drain', onDrain);
        res.off('close', onClose);
        if (gone) reject(new ClientGone());
        else resolve();
      };
      const onDrain = () => done(false);
      const onClose = () => done(true);
      res.on('drain', onDrain);
      res.on('close', onClose);
    });
  };
}

const EXTENSIONS: Record<ExportFormat, string> = { ndjson: 'ndjson', json: 'json', csv: 'csv', tsv: 'tsv' };

export async function exportCollection(exporter: Exporter, req: Request, res: Response): Promise<void> {
  const collection = String(req.params.collection_name);
  checkCollectionName(collection);
  const format = exportFormat(req);
  const request = {
    collection,
    filter: parseJsonFilter(queryText(req.query.filter)),
    projection: parseFieldList(queryText(req.query.projection)),
    format,
  };
  res.status(200).set({
    'Content-Type': EXPORT_MEDIA_TYPES[format].contentType,
    'Content-Disposition': `attachment; filename="${collection}.${EXTENSIONS[format]}"`,
    'Cache-Control': 'no-store',
  });
  try {
    const records = await exporter.write(request, responseSink(res));
    res.end();
    req.log?.debug({ collection, format, records }, 'export finished');
  } catch (err) {
    if (err instanceof ClientGone) return;
    if (!res.headersSent) throw err;
    req.log?.error({ err, collection, format }, 'export failed while streaming; connection ended');
    res.destroy(err instanceof Error ? err : new Error(String(err)));
  }
}
