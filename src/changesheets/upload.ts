/**
 * The multipart/form-data reader of the changesheet endpoints (busboy), mounted before the OpenAPI
 * validator: the file part `uploaded_file` is held in memory, at most `maxBytes` (MAX_BODY_BYTES;
 * 413 beyond), and `req.body.uploaded_file` is set so the validator sees the field the contract
 * requires. It is the only multipart reader of the service (the validator's own is turned off).
 */
import busboy from 'busboy';
import type { Request, RequestHandler } from 'express';
import { BadRequest, HttpError, Unprocessable } from '../http/errors.ts';
import type { SheetUpload } from './sheet.ts';

export const UPLOAD_FIELD = 'uploaded_file';

/** The paths whose multipart bodies are read here. */
export const CHANGESHEET_PATHS: ReadonlySet<string> = new Set([
  '/metadata/changesheets:validate',
  '/metadata/changesheets:submit',
]);

const UPLOAD_KEY = Symbol('changesheetUpload');

/** The uploaded sheet of this request (set by `changesheetUploads`). */
export function uploadOf(req: Request): SheetUpload | undefined {
  return (req as unknown as Record<symbol, SheetUpload | undefined>)[UPLOAD_KEY];
}

export class PayloadTooLarge extends HttpError {
  constructor(detail: string) {
    super(413, detail);
  }
}

function isMultipart(req: Request): boolean {
  return /^multipart\/form-data\b/i.test(req.headers['content-type'] ?? '');
}

export function changesheetUploads(maxBytes: number): RequestHandler {
  return (req, _res, next) => {
    if (req.method !== 'POST' || !CHANGESHEET_PATHS.has(req.path) || !isMultipart(req)) return next();
    readUpload(req, maxBytes).then(
      (upload) => {
        if (upload) {
          (req as unknown as Record<symbol, SheetUpload>)[UPLOAD_KEY] = upload;
          req.body = { [UPLOAD_FIELD]: '' };
        } else {
          req.body = {};
        }
        next();
      },
      (err: unknown) => next(err),
    );
  };
}

/** Room for the multipart boundaries and part headers around the file. */
const ENVELOPE_BYTES = 64 * 1024;

function tooLarge(maxBytes: number): PayloadTooLarge {
  return new PayloadTooLarge(
    `The uploaded file is larger than the limit of ${maxBytes} bytes (MAX_BODY_BYTES); split the changesheet into smaller ones`,
  );
}

const malformed = (err: Error) => new BadRequest(`The body is not valid multipart/form-data: ${err.message}`);

function readUpload(req: Request, maxBytes: number): Promise<SheetUpload | undefined> {
  return new Promise((resolve, reject) => {
    // A body announced far beyond the limit is refused before any of it is read.
    const announced = Number(req.headers['content-length']);
    if (Number.isFinite(announced) && announced > maxBytes + ENVELOPE_BYTES) {
      req.resume();
      reject(tooLarge(maxBytes));
      return;
    }
    // A client that goes away mid-upload: nothing more will come.
    req.once('close', () => {
      if (!req.complete) reject(new BadRequest('The upload was interrupted before the body was complete'));
    });
    let parser: busboy.Busboy;
    try {
      parser = busboy({
        headers: req.headers,
        limits: { fileSize: maxBytes, files: 4, fields: 20, fieldSize: 64 * 1024, parts: 24 },
      });
    } catch (err) {
      reject(malformed(err as Error));
      return;
    }
    let upload: SheetUpload | undefined;
    let failure: Error | undefined;
    const fail = (err: Error) => {
      failure ??= err;
    };
    parser.on('file', (name, stream, info) => {
      // A body that ends inside a file part fails the part's stream as well as the parser: an
      // 'error' without a listener would end the process.
      stream.on('error', (err: Error) => fail(malformed(err)));
      if (name !== UPLOAD_FIELD || upload !== undefined) {
        stream.resume();
        return;
      }
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('limit', () => fail(tooLarge(maxBytes)));
      stream.on('end', () => {
        upload = { filename: info.filename, contentType: info.mimeType, content: Buffer.concat(chunks) };
      });
    });
    parser.on('field', (name) => {
      if (name === UPLOAD_FIELD) {
        fail(
          new Unprocessable(`${UPLOAD_FIELD} must be a file part (with a filename), not a plain form field`),
        );
      }
    });
    parser.on('error', (err: Error) => {
      req.unpipe(parser);
      req.resume();
      reject(failure ?? malformed(err));
    });
    parser.on('close', () => (failure ? reject(failure) : resolve(upload)));
    req.pipe(parser);
  });
}
