import type { FastifyReply, FastifyRequest } from 'fastify';
import { SESSION_TTL_SECONDS, type Session } from '../sessions/service.js';

/** Where a kind of browser session lives: the OAuth pages' and the console's. */
export interface SessionCookie {
  name: string;
  path: string;
  sameSite: 'lax' | 'strict';
}

/** Sets a session's cookie: HttpOnly, Secure over HTTPS, for the session's whole lifetime. */
export function setSessionCookie(
  request: FastifyRequest,
  reply: FastifyReply,
  cookie: SessionCookie,
  session: Session,
): void {
  reply.setCookie(cookie.name, session.id, {
    path: cookie.path,
    httpOnly: true,
    sameSite: cookie.sameSite,
    // request.protocol is https under TLS, or behind a trusted proxy that says so.
    secure: request.protocol === 'https',
    maxAge: SESSION_TTL_SECONDS,
  });
}
