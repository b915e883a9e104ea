/**
 * Failures of the search side that are not the user's doing. The HTTP layer answers them as 503
 * (the caller may retry); nothing of the engine's own error text reaches a response.
 */

/** The search index could not answer for now (unreachable, overloaded, refusing our credentials). */
export class SearchIndexUnavailable extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'SearchIndexUnavailable';
  }
}
