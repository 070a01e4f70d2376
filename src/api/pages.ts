import type { FastifyReply } from 'fastify'
import type { Page } from '../services/identity/page.ts'

/** The HTML pages the routes serve (the front door, docs, sign-in and OAuth): shared headers and escaping. */

export { escapeHtml } from '../platform/markdown.ts'

/** An HTML page with the headers every erm3 page has: its CSP, no sniffing, no referrer. */
export function htmlPage(reply: FastifyReply, csp: string, body: string) {
  return reply
    .header('Content-Type', 'text/html; charset=utf-8')
    .header('Content-Security-Policy', csp)
    .header('X-Content-Type-Options', 'nosniff')
    .header('Referrer-Policy', 'no-referrer')
    .send(body)
}

/** An HTML page of the sign-in and authorization flows: not cached, not framed, under its own CSP. */
export function sendPage(reply: FastifyReply, page: Page): FastifyReply {
  return reply
    .code(page.status)
    .header('Content-Type', 'text/html; charset=utf-8')
    .header('Cache-Control', 'no-store')
    .header('X-Frame-Options', 'DENY')
    .header('Content-Security-Policy', page.csp)
    .header('Referrer-Policy', 'no-referrer')
    .header('X-Content-Type-Options', 'nosniff')
    .send(page.html)
}
