import { Type } from 'typebox'
import { defineOperation } from '../operation.ts'

/**
 * The dashboard (src/web, built by `npm run build:web` into dist/web): a single page served at
 * /app with its hashed assets, under a strict Content-Security-Policy. It talks only to the
 * public API.
 */

const getApp = defineOperation({
  id: 'getApp',
  method: 'GET',
  path: '/app',
  summary:
    'The dashboard: sign in, keys, billing, usage, webhooks, and a risk explorer for tickers and portfolios',
  tags: ['docs'],
  auth: 'none',
  status: 200,
  response: Type.String(),
  contentType: 'text/html; charset=utf-8',
  errors: [503],
})

const getAppAsset = defineOperation({
  id: 'getAppAsset',
  method: 'GET',
  path: '/app/assets/:asset',
  summary: 'A script or style sheet of the dashboard (content-hashed names, cached for a year)',
  tags: ['docs'],
  auth: 'none',
  params: Type.Object({ asset: Type.String({ maxLength: 128 }) }, { additionalProperties: false }),
  status: 200,
  response: Type.String(),
  contentType: 'text/javascript; charset=utf-8, text/css; charset=utf-8',
  errors: [404],
})

export const WEB_OPS = { getApp, getAppAsset } as const
