/**
 * Requests Node's HTTP parser refuses before Express sees them (headers larger than the limit, a
 * malformed request line, a timeout) answered like every other error: a status and a JSON
 * `{"detail": ...}`, then the connection closed. Node's own answer has an empty body.
 */
import type { Server } from 'node:http';
import type { Duplex } from 'node:stream';

/** Node's limit on the size of the request line and headers together (`--max-http-header-size`, 16 KiB by default). */
export function maxHeaderBytes(server: Server): number {
  return (server as Server & { maxHeaderSize?: number }).maxHeaderSize ?? 16 * 1024;
}

function answer(socket: Duplex, status: number, reason: string, detail: string): void {
  const body = JSON.stringify({ detail });
  socket.end(
    `HTTP/1.1 ${status} ${reason}\r\n` +
      'Content-Type: application/json; charset=utf-8\r\n' +
      `Content-Length: ${Buffer.byteLength(body)}\r\n` +
      'Connection: close\r\n\r\n' +
      body,
  );
}

export function answerClientErrors(server: Server): void {
  server.on('clientError', (err: NodeJS.ErrnoException, socket: Duplex) => {
    // Nothing can be sent on a connection the client closed, or once a response has begun.
    if (
      err.code === 'ECONNRESET' ||
      !socket.writable ||
      (socket as { _httpMessage?: unknown })._httpMessage
    ) {
      socket.destroy();
      return;
    }
    if (err.code === 'HPE_HEADER_OVERFLOW') {
      answer(
        socket,
        431,
        'Request Header Fields Too Large',
        `The request line and headers are larger than the limit of ${maxHeaderBytes(server)} bytes together; ` +
          'send fewer or smaller headers, and a long filter in the body of POST /queries:run',
      );
    } else if (err.code === 'HPE_HEADER_TIMEOUT' || err.code === 'ERR_HTTP_REQUEST_TIMEOUT') {
      answer(socket, 408, 'Request Timeout', 'The request was not received in time');
    } else {
      answer(socket, 400, 'Bad Request', `Malformed HTTP request (${err.code ?? 'parse error'})`);
    }
  });
}
