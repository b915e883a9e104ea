/**
 * A multipart/form-data body with one file field, as `requests` builds it for
 * `files={field: (filename, content)}`: a random hex boundary, the part's disposition with its
 * name and filename, no Content-Type of the part unless given.
 */
import { randomBytes } from 'node:crypto';

export function multipartBody(
  field: string,
  filename: string,
  content: string | Buffer,
  partType?: string,
): { body: Buffer; contentType: string } {
  const boundary = randomBytes(16).toString('hex');
  const head =
    `--${boundary}\r\n` +
    `Content-Disposition: form-data; name="${field}"; filename="${filename}"\r\n` +
    (partType ? `Content-Type: ${partType}\r\n` : '') +
    '\r\n';
  const body = Buffer.concat([
    Buffer.from(head, 'utf8'),
    Buffer.isBuffer(content) ? content : Buffer.from(content, 'utf8'),
    Buffer.from(`\r\n--${boundary}--\r\n`, 'utf8'),
  ]);
  return { body, contentType: `multipart/form-data; boundary=${boundary}` };
}
