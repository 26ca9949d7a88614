// The API reference's own script, run before Swagger UI draws the page (src/http/openapi.ts): what
// @fastify/swagger-ui's page cannot be given by options.

// The page has no viewport meta: without one a phone lays it out 980 px wide and shrinks it.
const viewport = document.createElement('meta');
viewport.name = 'viewport';
viewport.content = 'width=device-width, initial-scale=1';
document.head.append(viewport);

// The service's name above the reference, as the console's pages have it, and the reference in
// the page's main landmark.
const reference = document.getElementById('swagger-ui');
const header = document.createElement('header');
header.className = 'top';
header.innerHTML =
  '<p class="brand"><a href="/">Loyalty API</a> reference</p>' +
  '<nav aria-label="Elsewhere"><ul><li><a href="/admin">The console</a></li>' +
  '<li><a href="/v1/openapi.json">The OpenAPI document</a></li></ul></nav>';
const main = document.createElement('main');
reference.before(header, main);
main.append(reference);

// What Swagger UI draws without it, given as each element appears: names for controls that have
// none or one that leaves out the words they show (WCAG 2.5.3), and a way for the keyboard into
// the curl command, which scrolls sideways on a phone.
const ATTRIBUTES = [
  ['#servers', 'aria-label', 'Server'],
  ['.copy-to-clipboard > button', 'aria-label', 'Copy to clipboard'],
  ['.close-modal', 'aria-label', 'Close'],
  ['.modal-btn.authorize', 'aria-label', 'Authorize'],
  ['.curl', 'tabindex', '0'],
];
new MutationObserver(() => {
  for (const [selector, attribute, value] of ATTRIBUTES) {
    for (const element of reference.querySelectorAll(selector)) {
      if (element.getAttribute(attribute) !== value) element.setAttribute(attribute, value);
    }
  }
}).observe(reference, { childList: true, subtree: true });
