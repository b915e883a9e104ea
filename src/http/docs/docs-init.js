/* Starts Swagger UI on the docs page: both API versions, the three login methods, and a banner
 * with the bearer token after a sign-in with ORCID (for command-line use). Served from our origin. */
(function () {
  'use strict';

  var EXTERNAL_SCHEME = 'orcidLogin';
  var banner = document.getElementById('nmdc-login-banner');
  var tokenText = document.getElementById('nmdc-login-token');
  var showButton = document.getElementById('nmdc-login-show');
  var copyButton = document.getElementById('nmdc-login-copy');
  var currentToken = null;

  function mask(token) {
    return token.length > 12 ? token.slice(0, 6) + '\u2026' + token.slice(-4) : '\u2026';
  }

  function showBanner(token) {
    currentToken = token;
    tokenText.textContent = 'Authorization: Bearer ' + mask(token);
    showButton.textContent = 'Show token';
    banner.hidden = false;
  }

  function hideBanner() {
    currentToken = null;
    tokenText.textContent = '';
    banner.hidden = true;
  }

  showButton.addEventListener('click', function () {
    if (!currentToken) return;
    var shown = showButton.textContent === 'Hide token';
    tokenText.textContent = 'Authorization: Bearer ' + (shown ? mask(currentToken) : currentToken);
    showButton.textContent = shown ? 'Show token' : 'Hide token';
  });

  copyButton.addEventListener('click', function () {
    if (!currentToken || !navigator.clipboard) return;
    navigator.clipboard.writeText(currentToken).then(function () {
      copyButton.textContent = 'Copied';
      setTimeout(function () {
        copyButton.textContent = 'Copy token';
      }, 1500);
    });
  });

  function externalTokenOf(authorized) {
    var entry = authorized && authorized[EXTERNAL_SCHEME];
    return entry && entry.token && entry.token.access_token ? entry.token.access_token : null;
  }

  /**
   * Shows the banner whenever the ORCID login holds a token, and hides it on logout. Also offers
   * the ORCID login only as authorization code + PKCE: Swagger UI would otherwise list one entry
   * per grant type the provider's discovery document supports (password, client credentials...),
   * which the other two logins already cover.
   */
  function LoginBannerPlugin() {
    return {
      statePlugins: {
        auth: {
          wrapSelectors: {
            definitionsToAuthorize: function (original) {
              return function () {
                var definitions = original.apply(null, arguments);
                return definitions.filter(function (entry) {
                  var external = entry.get(EXTERNAL_SCHEME);
                  return !external || external.get('flow') === 'authorization_code';
                });
              };
            },
          },
          wrapActions: {
            authorizeOauth2: function (original) {
              return function (payload) {
                var result = original(payload);
                if (payload && payload.auth && payload.auth.name === EXTERNAL_SCHEME && payload.token) {
                  showBanner(payload.token.access_token);
                }
                return result;
              };
            },
            // A persisted ORCID login (page reload) shows its banner again.
            restoreAuthorization: function (original) {
              return function (payload) {
                var result = original(payload);
                var token = externalTokenOf(payload && payload.authorized);
                if (token) showBanner(token);
                return result;
              };
            },
            logout: function (original) {
              return function (names) {
                var result = original(names);
                if (!names || names.indexOf(EXTERNAL_SCHEME) !== -1) hideBanner();
                return result;
              };
            },
          },
        },
      },
    };
  }

  var ui = window.SwaggerUIBundle({
    urls: [
      { url: '/openapi.json', name: '2.13.0' },
      { url: '/openapi-1.2.0.json', name: '1.2.0' },
    ],
    'urls.primaryName': '2.13.0',
    dom_id: '#swagger-ui',
    deepLinking: true,
    persistAuthorization: true,
    // No badge from the public online validator: the page never calls outside our origin.
    validatorUrl: null,
    oauth2RedirectUrl: new URL('/docs/oauth2-redirect.html', window.location.href).href,
    presets: [window.SwaggerUIBundle.presets.apis, window.SwaggerUIStandalonePreset],
    plugins: [window.SwaggerUIBundle.plugins.DownloadUrl, LoginBannerPlugin],
    layout: 'StandaloneLayout',
  });
  ui.initOAuth({ clientId: 'swagger-ui', usePkceWithAuthorizationCodeGrant: true });
  window.ui = ui;
})();
