/**
 * How the R notebooks put their calls on the wire, written from the behaviour of R 4.5.2 and the
 * packages `renv.lock` pins (jsonlite 2.0.0, httr 1.4.7, curl 7.0.0, rjson 0.2.23):
 * - `utils::URLencode(URL, reserved = FALSE, repeated = TRUE)`, which the helpers of
 *   `utility_functions.R` run over the whole pasted URL;
 * - the headers of `jsonlite::fromJSON(url)` and `rjson::fromJSON(file = url)` (both open the URL
 *   with base R's libcurl `url()` connection) and of `httr::GET(url)`.
 */

/** Every notebook has this base hard-coded; the tests send the rest of the URL to our service. */
export const NMDC_API = 'https://api.microbiomedata.org';

/** `getOption("HTTPUserAgent")` of R 4.5.2 on Linux, which base R's libcurl connections send. */
export const R_USER_AGENT = 'R (4.5.2 x86_64-pc-linux-gnu x86_64 linux-gnu)';

/**
 * `jsonlite::fromJSON(url)`: a URL shorter than 2084 bytes is opened with
 * `url(txt, headers = c(Accept = "application/json, text/*, *\/*"))`; no Accept-Encoding.
 */
export const JSONLITE_HEADERS: Record<string, string> = {
  'User-Agent': R_USER_AGENT,
  Accept: 'application/json, text/*, */*',
};

/** jsonlite reads a longer "URL" as JSON text and fails: every R URL must stay below this. */
export const JSONLITE_URL_LIMIT = 2084;

/** `rjson::fromJSON(file = url)` reads through `readLines(url(...))`: libcurl's own `Accept: *\/*`. */
export const RJSON_HEADERS: Record<string, string> = {
  'User-Agent': R_USER_AGENT,
  Accept: '*/*',
};

/**
 * `httr::GET(url)` with httr's defaults: the curl package's User-Agent (libcurl as on Ubuntu 24.04),
 * every encoding libcurl can decode, and httr's JSON-first Accept.
 */
export const HTTR_HEADERS: Record<string, string> = {
  'User-Agent': 'libcurl/8.5.0 r-curl/7.0.0 httr/1.4.7',
  'Accept-Encoding': 'deflate, gzip, br, zstd',
  Accept: 'application/json, text/xml, application/xml, */*',
};

/** Characters `URLencode(reserved = FALSE)` leaves alone: unreserved plus the reserved set. */
const KEPT = /[A-Za-z0-9._~\-\][!$&'()*+,;=:/?@#]/;

/**
 * `utils::URLencode(URL, reserved = FALSE, repeated = TRUE)`: every character outside the kept set
 * becomes `%XX` per UTF-8 byte, upper-case hex; with `repeated = TRUE` an existing `%XX` is
 * encoded again (`%` is not kept).
 */
export function urlEncode(url: string): string {
  let out = '';
  for (const ch of url) {
    if (KEPT.test(ch)) {
      out += ch;
      continue;
    }
    for (const byte of Buffer.from(ch, 'utf8')) out += `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out;
}

/** The request target (path and query) of a URL on the NMDC API, exactly as written. */
export function targetOf(url: string): string {
  if (!url.startsWith(NMDC_API)) throw new Error(`not an NMDC API URL: ${url}`);
  return url.slice(NMDC_API.length);
}
