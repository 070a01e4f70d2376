import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { FastifyReply } from 'fastify'
import { AppError } from '../../platform/errors.ts'
import { type RouteDeps, type RouteFile, routeFile } from './types.ts'

/**
 * GET /app and /app/assets/{asset}: the built dashboard from dist/web (read once at start). The
 * page runs only its own bundled script and style sheet (no inline code, no CDN), talks only to
 * this origin, and cannot be framed.
 */

const APP_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
]

/**
 * The dashboard's policy. With Plaid configured, the brokerage page loads Plaid Link, which Plaid
 * requires to come from its CDN and which runs in a frame from it and talks to its API host
 * (Plaid's Link web SDK, "CSP directives"): those three origins are added, and nothing else.
 */
function appCsp(plaidEnv: 'sandbox' | 'production' | null): string {
  if (plaidEnv === null) return APP_CSP.join('; ')
  return APP_CSP.map((d) =>
    d === "script-src 'self'"
      ? "script-src 'self' https://cdn.plaid.com/link/v2/stable/link-initialize.js"
      : d === "connect-src 'self'"
        ? `connect-src 'self' https://${plaidEnv}.plaid.com`
        : d,
  )
    .concat('frame-src https://cdn.plaid.com')
    .join('; ')
}

const TYPES: Record<string, string> = {
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
}

const WEB_DIST = fileURLToPath(new URL('../../../dist/web', import.meta.url))

interface Built {
  index: string
  assets: Map<string, { type: string; body: Buffer }>
}

function load(dir: string): Built | null {
  const index = join(dir, 'index.html')
  if (!existsSync(index)) return null
  const assets = new Map<string, { type: string; body: Buffer }>()
  const assetDir = join(dir, 'assets')
  if (existsSync(assetDir))
    for (const name of readdirSync(assetDir)) {
      const type = TYPES[name.slice(name.lastIndexOf('.'))]
      if (type) assets.set(name, { type, body: readFileSync(join(assetDir, name)) })
    }
  return { index: readFileSync(index, 'utf8'), assets }
}

function secure(reply: FastifyReply, csp: string): FastifyReply {
  return reply
    .header('Content-Security-Policy', csp)
    .header('X-Content-Type-Options', 'nosniff')
    .header('Referrer-Policy', 'same-origin')
    .header('Cross-Origin-Opener-Policy', 'same-origin')
}

export function appRoutes({ ctx }: RouteDeps): RouteFile {
  const built = load(WEB_DIST)
  const csp = appCsp(ctx.config.plaid?.env ?? null)
  return routeFile(import.meta.url, {
    getApp: async (_req, reply) => {
      if (!built)
        throw new AppError(
          'UNAVAILABLE',
          'The dashboard is not built on this instance: run `npm run build:web` (npm ci does it) and restart',
        )
      return secure(reply, csp)
        .header('Content-Type', 'text/html; charset=utf-8')
        .header('Cache-Control', 'no-cache')
        .send(built.index)
    },
    getAppAsset: async (req, reply) => {
      const name = req.params.asset
      const a = built?.assets.get(name)
      if (!a) throw new AppError('NOT_FOUND', `No such dashboard file: ${name}`)
      return secure(reply, csp)
        .header('Content-Type', a.type)
        .header('Cache-Control', 'public, max-age=31536000, immutable')
        .send(a.body)
    },
  })
}
