/** Small HTML pages of the sign-in flows (served from our origin; the token is shown once). */

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

const STYLE = `body{font-family:system-ui,sans-serif;max-width:52rem;margin:2rem auto;padding:0 1rem;line-height:1.5}
textarea,pre{width:100%;font-family:ui-monospace,monospace;font-size:.85rem;box-sizing:border-box}
pre{background:#f4f4f4;padding:.75rem;white-space:pre-wrap;word-break:break-all}
button{padding:.4rem 1rem;margin:.25rem 0}label{display:block;margin:.5rem 0}`;

function page(title: string, body: string): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">
<title>${escapeHtml(title)}</title><style>${STYLE}</style></head><body>${body}</body></html>`;
}

export function tokenPage(options: {
  username: string;
  accessToken: string;
  publicUrl: string;
  expiresText: string;
}): string {
  const token = escapeHtml(options.accessToken);
  const curl = escapeHtml(
    `curl -H "Authorization: Bearer ${options.accessToken}" ${options.publicUrl}/users/me`,
  );
  return page(
    'Signed in',
    `<h1>Signed in as ${escapeHtml(options.username)}</h1>
<p>Your access token (valid ${escapeHtml(options.expiresText)}). Keep it secret; it is shown only on this page.</p>
<textarea id="token" rows="6" readonly>${token}</textarea>
<button type="button" id="copy">Copy</button> <span id="copied" role="status"></span>
<p>Use it from a command line:</p>
<pre id="curl">${curl}</pre>
<p><a href="${escapeHtml(options.publicUrl)}/docs">Back to the API documentation</a></p>
<script>
document.getElementById('copy').addEventListener('click', function () {
  var text = document.getElementById('token').value;
  var done = function () { document.getElementById('copied').textContent = 'Copied'; };
  if (navigator.clipboard) navigator.clipboard.writeText(text).then(done, function () {});
  else { document.getElementById('token').select(); document.execCommand('copy'); done(); }
});
</script>`,
  );
}

export function errorPage(title: string, message: string): string {
  return page(title, `<h1>${escapeHtml(title)}</h1><p>${escapeHtml(message)}</p>`);
}

export function passwordLoginPage(
  action: string,
  options: { externalUrl?: string; externalLabel?: string; error?: string },
): string {
  const external = options.externalUrl
    ? `<p><a href="${escapeHtml(options.externalUrl)}">Sign in with ${escapeHtml(options.externalLabel ?? 'external identity')}</a></p><p>or with a username and password:</p>`
    : '';
  const error = options.error ? `<p role="alert">${escapeHtml(options.error)}</p>` : '';
  return page(
    'Sign in',
    `<h1>Sign in</h1>${external}${error}
<form method="post" action="${escapeHtml(action)}">
<label>Username <input name="username" autocomplete="username" required></label>
<label>Password <input name="password" type="password" autocomplete="current-password" required></label>
<button type="submit">Sign in</button></form>`,
  );
}
