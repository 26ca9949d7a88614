import type { FastifyInstance, FastifyRequest } from 'fastify';

/**
 * The home page's policy, in the console's style: its stylesheet and nothing else. No script
 * runs, no style is inline, no form is sent, nothing frames it.
 */
export const HOME_CSP =
  "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'none'; frame-ancestors 'none'; base-uri 'none'";

/** Where a newcomer goes from `/`, for a client that asks for JSON. */
export const HOME_INDEX = {
  name: 'Loyalty API',
  links: {
    console: '/admin',
    api_reference: '/docs',
    openapi: '/v1/openapi.json',
    health: '/healthz',
  },
} as const;

const HOME_PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Loyalty API</title>
<link rel="stylesheet" href="/admin/assets/admin.css">
</head>
<body>
<main id="main">
<div class="narrow">
<h1>Loyalty API</h1>
<p class="lede">This server runs merchants' loyalty programs: a JSON API under <code>/v1</code> for the apps that integrate with them, and a console for the merchants.</p>
<ul>
  <li><a href="/admin">The console</a>: set up and run a program in the browser (sign in with a user made by <code>loyalty demo</code> or <code>loyalty users create</code>).</li>
  <li><a href="/docs">The API reference</a>: every operation, its scopes and answers.</li>
  <li><a href="/v1/openapi.json">The OpenAPI document</a>, for generated clients: requests to <code>/v1</code> carry <code>Authorization: Bearer</code> with an API key or an app's access token.</li>
</ul>
</div>
</main>
</body>
</html>
`;

/**
 * `GET /` (and HEAD): a page pointing to the console, the API reference and the OpenAPI
 * document, or the same links as JSON for a client that prefers `application/json`. It is
 * not an API operation: no credential, no rate limit, not in the OpenAPI document.
 */
export async function homeRoutes(app: FastifyInstance): Promise<void> {
  app.get('/', { schema: { hide: true } }, async (request, reply) => {
    // The answer depends on Accept: a cache must not hand the page to a JSON client.
    reply.header('vary', 'accept');
    if (prefersJson(request)) return reply.type('application/json; charset=utf-8').send(HOME_INDEX);
    return reply.header('content-security-policy', HOME_CSP).type('text/html; charset=utf-8').send(HOME_PAGE);
  });
  // Browsers ask for it on every page (this one and the console's); a 404 would show as an
  // error in their console. No icon, said plainly, and remembered for a day.
  app.get('/favicon.ico', { schema: { hide: true } }, async (_request, reply) =>
    reply.code(204).header('cache-control', 'public, max-age=86400').send(),
  );
}

/**
 * True when the Accept header ranks `application/json` above `text/html` (RFC 9110 12.5.1:
 * each type's quality is that of its most specific matching range). Ties, no header and
 * a browser's `text/html,…,*\/*;q=0.8` get the page.
 */
function prefersJson(request: FastifyRequest): boolean {
  const accept = request.headers.accept;
  if (accept === undefined) return false;
  const ranges = accept.split(',').map((part) => {
    const [range = '', ...params] = part.split(';').map((s) => s.trim().toLowerCase());
    const q = params.find((p) => p.startsWith('q='));
    const quality = q === undefined ? 1 : Number(q.slice(2));
    return { range, quality: Number.isFinite(quality) ? quality : 0 };
  });
  const quality = (type: string): number => {
    const [major] = type.split('/');
    const exact = ranges.find((r) => r.range === type);
    const family = ranges.find((r) => r.range === `${major}/*`);
    const any = ranges.find((r) => r.range === '*/*');
    return (exact ?? family ?? any)?.quality ?? 0;
  };
  return quality('application/json') > quality('text/html');
}
