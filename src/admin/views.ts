import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Eta } from 'eta';
import type { Session, SessionUser } from '../sessions/service.js';
import { type PointsLabel, pointsText } from './form.js';

/**
 * The console's Content-Security-Policy: its own stylesheet and nothing else. No script runs,
 * no style is inline, forms post only here, nothing frames the console.
 */
export const CONSOLE_CSP =
  "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

/**
 * The CSP of a page with a Copy button (a new API key, a webhook secret, a customer's referral
 * URL): the console's, and its one script, `/admin/assets/copy.js`, served from here. No inline script.
 */
export const COPY_CSP = `${CONSOLE_CSP}; script-src 'self'`;

/**
 * The console's templates and stylesheet: src/admin of the package, wherever this module was
 * compiled to (dist/, dist-bench/src/, or src/ itself under the tests). tsc does not copy them.
 */
export const ADMIN_FILES = (() => {
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, 'package.json'))) {
    const parent = dirname(dir);
    if (parent === dir) throw new Error(`no package.json above ${fileURLToPath(import.meta.url)}`);
    dir = parent;
  }
  return join(dir, 'src', 'admin');
})();

// Read once, then kept compiled.
const eta = new Eta({
  views: join(ADMIN_FILES, 'views'),
  autoEscape: true,
  cache: true,
});

/** The console's sections, in the navigation's order. */
export const SECTIONS = [
  { href: '/admin/overview', label: 'Overview' },
  { href: '/admin/customers', label: 'Customers' },
  { href: '/admin/referrals', label: 'Referrals' },
  { href: '/admin/rewards', label: 'Rewards' },
  { href: '/admin/earning-rules', label: 'Earning rules' },
  { href: '/admin/activity-types', label: 'Activity types' },
  { href: '/admin/vip-tiers', label: 'VIP tiers' },
  { href: '/admin/points-products', label: 'Points products' },
  { href: '/admin/points-settings', label: 'Points settings' },
  { href: '/admin/referral-settings', label: 'Referral settings' },
  { href: '/admin/api-keys', label: 'API keys' },
  { href: '/admin/apps', label: 'Connected apps' },
  { href: '/admin/webhooks', label: 'Webhooks' },
  { href: '/admin/imports', label: 'Import and export' },
] as const;

/** The signed-in merchant of a console request, with the session's CSRF token. */
export interface ConsoleUser {
  session: Session;
  user: SessionUser;
  csrf: string;
}

/** What every page is rendered with. */
export interface PageData extends Record<string, unknown> {
  title: string;
  console: ConsoleUser | null;
  /** The request's path, to mark the current section. */
  path: string;
}

/** Helpers the templates call (as `it.fmt`). */
const fmt = {
  /** 12,345 */
  number: (value: number) => value.toLocaleString('en-US'),
  /** 2026-11-24 14:05 UTC */
  time: (ms: number) => `${new Date(ms).toISOString().slice(0, 16).replace('T', ' ')} UTC`,
  /** An ISO timestamp of the API as `time` writes it. */
  isoTime: (iso: string) => `${iso.slice(0, 16).replace('T', ' ')} UTC`,
  /** 33.3%: a share (0 to 1) as a percentage. */
  percent: (share: number) => share.toLocaleString('en-US', { style: 'percent', maximumFractionDigits: 1 }),
  /** 1,500 Coins: an amount in the account's points labels. */
  points: (n: number, label: PointsLabel) => pointsText(n, label),
  /** The section a path belongs to. */
  current: (path: string, href: string) => {
    // An export is made from the Import and export page, whose section it stays in.
    const section = path === '/admin/exports' ? '/admin/imports' : path;
    return section === href || section.startsWith(`${href}/`);
  },
};

/** Renders `views/<view>.eta` inside the layout. */
export function renderPage(view: string, data: PageData): string {
  return eta.render(`./${view}`, { ...data, sections: SECTIONS, fmt });
}
