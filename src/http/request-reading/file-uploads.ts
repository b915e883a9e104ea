/**
 * The multipart/form-data reader (busboy) of the endpoints that take a file upload, mounted before
 * the OpenAPI validator: the named file part is held in memory, at most `maxBytes` (MAX_BODY_BYTES;
 * 413 beyond), and `req.body[field]` is set so the validator sees the field the contract requires.
 * It is the only multipart reader of the service (the validator's own is turned off).
 */
import busboy from 'busboy';
import type { Request, RequestHandler } from 'express';
import { Unprocessable, UploadMalformed, UploadTooLarge } from '../../errors.ts';

/** A file part, as the client sent it. */
export interface UploadedFile {
  /** The file name the client gave (may be absent). */
  filename?: string;
  /** The part's content type. */
  contentType?: string;
  content: Buffer;
}

/** Which requests carry a file, in which form field, and what to tell a client whose file is too big. */
export interface FileUploadRoutes {
  /** `POST` paths whose multipart bodies are read. */
  paths: ReadonlySet<string>;
  /** The file part's name. */
  field: string;
  /** Said after the limit when a file is over it, e.g. `split the changesheet into smaller ones`. */
  tooLargeAdvice: string;
}

const UPLOAD_KEY = Symbol('fileUpload');

/** The uploaded file of this request (set by `fileUploads`). */
export function uploadOf(req: Request): UploadedFile | undefined {
  return (req as unknown as Record<symbol, UploadedFile | undefined>)[UPLOAD_KEY];
}

function isMultipart(req: Request): boolean {
  return /^multipart\/form-data\b/i.test(req.headers['content-type'] ?? '');
}

export function fileUploads(maxBytes: number, routes: FileUploadRoutes): RequestHandler {
  return (req, _res, next) => {
    if (req.method !== 'POST' || !routes.paths.has(req.path) || !isMultipart(req)) return next();
    readUpload(req, maxBytes, routes).then(
      (upload) => {
        if (upload) {
          (req as unknown as Record<symbol, UploadedFile>)[UPLOAD_KEY] = upload;
          req.body = { [routes.field]: '' };
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

function tooLarge(maxBytes: number, routes: FileUploadRoutes): UploadTooLarge {
  return new UploadTooLarge(
    `The uploaded file is larger than the limit of ${maxBytes} bytes (MAX_BODY_BYTES); ${routes.tooLargeAdvice}`,
  );
}

const malformed = (err: Error) =>
  new UploadMalformed(`The body is not valid multipart/form-data: ${err.message}`);

function readUpload(
  req: Request,
  maxBytes: number,
  routes: FileUploadRoutes,
): Promise<UploadedFile | undefined> {
  return new Promise((resolve, reject) => {
    // A body announced far beyond the limit is refused before any of it is read.
    const announced = Number(req.headers['content-length']);
    if (Number.isFinite(announced) && announced > maxBytes + ENVELOPE_BYTES) {
      req.resume();
      reject(tooLarge(maxBytes, routes));
      return;
    }
    // A client that goes away mid-upload: nothing more will come.
    req.once('close', () => {
      if (!req.complete)
        reject(new UploadMalformed('The upload was interrupted before the body was complete'));
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
    let upload: UploadedFile | undefined;
    let failure: Error | undefined;
    const fail = (err: Error) => {
      failure ??= err;
    };
    parser.on('file', (name, stream, info) => {
      // A body that ends inside a file part fails the part's stream as well as the parser: an
      // 'error' without a listener would end the process.
      stream.on('error', (err: Error) => fail(malformed(err)));
      if (name !== routes.field || upload !== undefined) {
        stream.resume();
        return;
      }
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('limit', () => fail(tooLarge(maxBytes, routes)));
      stream.on('end', () => {
        upload = { filename: info.filename, contentType: info.mimeType, content: Buffer.concat(chunks) };
      });
    });
    parser.on('field', (name) => {
      if (name === routes.field) {
        fail(
          new Unprocessable(`${routes.field} must be a file part (with a filename), not a plain form field`),
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
