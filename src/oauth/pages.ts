import { SCOPE_DESCRIPTIONS, type Scope } from '../auth/scopes.js';
import type { SessionUser } from '../sessions/service.js';
import { html, SafeHtml } from './html.js';
import { AUTHORIZE_PARAMS, type AuthorizeParams } from './params.js';

// Small server-rendered pages: no JavaScript, no external resources (the CSP allows none), one
// heading per page, labelled fields, and a DOM order that is the focus order.

const STYLE = `
:root{font-family:system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif;line-height:1.5;color-scheme:light}
body{margin:0;padding:2rem 1rem;background:#f3f4f6;color:#111827}
main{max-width:27rem;margin:0 auto;background:#fff;border:1px solid #e5e7eb;border-radius:12px;padding:2rem;box-shadow:0 1px 3px rgba(0,0,0,.08)}
h1{font-size:1.35rem;line-height:1.3;margin:0 0 1rem}
h2{font-size:1rem;margin:1.5rem 0 .5rem}
p{margin:.5rem 0}
label{display:block;font-weight:600;margin:1rem 0 .25rem}
input[type=email],input[type=password]{width:100%;box-sizing:border-box;padding:.6rem .7rem;font:inherit;border:1px solid #6b7280;border-radius:6px}
button{font:inherit;font-weight:600;padding:.6rem 1.3rem;border-radius:6px;border:2px solid #1d4ed8;cursor:pointer}
.primary{background:#1d4ed8;color:#fff}
.secondary{background:#fff;color:#1d4ed8}
.link{border:0;background:none;padding:0;color:#1d4ed8;font-weight:400;text-decoration:underline}
:focus-visible{outline:3px solid #b45309;outline-offset:2px}
.actions{display:flex;gap:.75rem;margin-top:1.5rem}
.error{background:#fef2f2;color:#991b1b;border:1px solid #fecaca;border-radius:6px;padding:.75rem}
.muted{color:#4b5563;font-size:.9rem}
.scopes{padding-left:1.25rem}
.scopes li{margin:.35rem 0}
.scopes code{display:block;font-size:.8rem;color:#4b5563}
.footer{margin-top:1.5rem;border-top:1px solid #e5e7eb;padding-top:1rem}
`;

function layout(title: string, body: SafeHtml): string {
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex">
<title>${title}</title>
<style>${new SafeHtml(STYLE)}</style>
</head>
<body>
<main>
${body}
</main>
</body>
</html>
`.toString();
}

/** The authorization request, carried through the forms unchanged. */
function hiddenFields(csrfToken: string, params: AuthorizeParams): SafeHtml {
  const fields = AUTHORIZE_PARAMS.filter((name) => params[name] !== undefined).map(
    (name) => html`<input type="hidden" name="${name}" value="${params[name]}">\n`,
  );
  return html`<input type="hidden" name="csrf_token" value="${csrfToken}">\n${fields}`;
}

export interface SignInPageInput {
  appName: string;
  params: AuthorizeParams;
  csrfToken: string;
  /** The email typed before, shown again after a failure. */
  email?: string;
  error?: string;
}

/** The merchant sign-in form. */
export function signInPage(input: SignInPageInput): string {
  const error = input.error ? html`<p class="error" role="alert" id="sign-in-error">${input.error}</p>` : '';
  const describedBy = input.error ? html` aria-describedby="sign-in-error"` : '';
  return layout(
    `Sign in to connect ${input.appName}`,
    html`<h1>Sign in to connect ${input.appName}</h1>
<p>${input.appName} is asking for access to your loyalty program. Sign in with your merchant account to review the request.</p>
${error}
<form method="post" action="/oauth2/sign-in">
${hiddenFields(input.csrfToken, input.params)}
<label for="email">Email</label>
<input id="email" name="email" type="email" autocomplete="username" required maxlength="254" value="${input.email ?? ''}"${describedBy}>
<label for="password">Password</label>
<input id="password" name="password" type="password" autocomplete="current-password" required${describedBy}>
<div class="actions"><button type="submit" class="primary">Sign in</button></div>
</form>`,
  );
}

export interface ConsentPageInput {
  appName: string;
  scopes: Scope[];
  user: SessionUser;
  params: AuthorizeParams;
  csrfToken: string;
  /** Where the browser goes after the decision, so the merchant can see it. */
  redirectOrigin: string;
}

/** The consent page: the app, what it may do in plain words, Approve and Deny. */
export function consentPage(input: ConsentPageInput): string {
  const scopes = input.scopes.map((scope) => html`<li>${SCOPE_DESCRIPTIONS[scope]}<code>${scope}</code></li>\n`);
  return layout(
    `Allow ${input.appName} to access your loyalty program?`,
    html`<h1>Allow ${input.appName} to access your loyalty program?</h1>
<p class="muted">Signed in as <strong>${input.user.email}</strong> for the account <strong>${input.user.accountName}</strong>.</p>
<h2 id="scopes-heading">${input.appName} will be able to:</h2>
<ul class="scopes" aria-labelledby="scopes-heading">
${scopes}</ul>
<p class="muted">Whichever you choose, you will be sent back to ${input.redirectOrigin}.</p>
<form method="post" action="/oauth2/authorize">
${hiddenFields(input.csrfToken, input.params)}
<div class="actions">
<button type="submit" name="decision" value="approve" class="primary">Approve</button>
<button type="submit" name="decision" value="deny" class="secondary">Deny</button>
</div>
</form>
<form method="post" action="/oauth2/sign-out" class="footer">
${hiddenFields(input.csrfToken, input.params)}
<button type="submit" class="link">Not you? Sign in with another account</button>
</form>`,
  );
}

/** An error the app cannot be told about (or that stops the pages): no redirect, a message. */
export function errorPage(title: string, message: string): string {
  return layout(
    title,
    html`<h1>${title}</h1>
<p role="alert">${message}</p>
<p class="muted">Close this page and return to the app you came from to start again.</p>`,
  );
}
