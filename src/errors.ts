/**
 * Errors with an HTTP status and a human `detail`, thrown anywhere and rendered once by the
 * error middleware as `{"detail": ...}` (with any other members an error carries).
 */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly detail: unknown,
    readonly headers: Record<string, string> = {},
    /** Members of the body beside `detail`, for clients that read more than the message. */
    readonly members: Record<string, unknown> = {},
  ) {
    super(typeof detail === 'string' ? detail : JSON.stringify(detail));
  }
}

export class BadRequest extends HttpError {
  constructor(detail: unknown) {
    super(400, detail);
  }
}

export class Unauthorized extends HttpError {
  constructor(detail: unknown = 'Access token is invalid or missing. Please log in again.') {
    super(401, detail, { 'WWW-Authenticate': 'Bearer' });
  }
}

export class Forbidden extends HttpError {
  constructor(detail: unknown = 'Forbidden') {
    super(403, detail);
  }
}

export class NotFound extends HttpError {
  constructor(detail: unknown = 'Not found') {
    super(404, detail);
  }
}

export class Conflict extends HttpError {
  constructor(detail: unknown) {
    super(409, detail);
  }
}

export class Unprocessable extends HttpError {
  constructor(detail: unknown) {
    super(422, detail);
  }
}

export class TooManyRequests extends HttpError {
  constructor(detail: unknown, retryAfterSeconds: number) {
    super(429, detail, { 'Retry-After': String(Math.max(1, Math.ceil(retryAfterSeconds))) });
  }
}

export class NotImplemented extends HttpError {
  constructor(detail: unknown = 'Not implemented') {
    super(501, detail);
  }
}

export class ServiceUnavailable extends HttpError {
  constructor(detail: unknown) {
    super(503, detail);
  }
}
