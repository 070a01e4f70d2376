/**
 * The per-request logger made on first use: nothing is built for a request that logs nothing
 * (or only below the level), and what is logged carries the request id binding as before.
 */
import assert from 'node:assert/strict'
import { Writable } from 'node:stream'
import { describe, it } from 'node:test'
import type { FastifyBaseLogger } from 'fastify'
import pino from 'pino'
import { type LazyChildLogger, lazyChildLoggerFactory } from '../../src/api/lazy-logger.ts'

function capture(level: string) {
  const lines: Record<string, unknown>[] = []
  const stream = new Writable({
    write(chunk, _enc, done) {
      lines.push(JSON.parse(String(chunk)))
      done()
    },
  })
  const root = pino({ level }, stream)
  let children = 0
  const child = root.child.bind(root)
  root.child = ((...args: Parameters<typeof child>) => {
    children++
    return child(...args)
  }) as typeof root.child
  return { root, lines, children: () => children }
}

describe('lazy request logger', () => {
  it('builds no child for a request that logs nothing, or only below the level', () => {
    const { root, lines, children } = capture('warn')
    const log = lazyChildLoggerFactory(root as unknown as FastifyBaseLogger, { reqId: 'req_1' }, {})
    log.info({ a: 1 }, 'below the level')
    log.debug('below the level')
    assert.equal(children(), 0)
    assert.equal(lines.length, 0)
    assert.equal(log.level, 'warn')
    assert.equal((log as unknown as LazyChildLogger).isLevelEnabled('info'), false)
    assert.equal((log as unknown as LazyChildLogger).isLevelEnabled('error'), true)
  })

  it('builds the child once, on the first line at an enabled level, with the request id bound', async () => {
    const { root, lines, children } = capture('info')
    const log = lazyChildLoggerFactory(root as unknown as FastifyBaseLogger, { reqId: 'req_2' }, {})
    log.warn({ err: 'x' }, 'first')
    log.info('second')
    log.error(new Error('boom'), 'third')
    await new Promise((r) => setImmediate(r))
    assert.equal(children(), 1)
    assert.deepEqual(
      lines.map((l) => [l.reqId, l.msg, l.level]),
      [
        ['req_2', 'first', 40],
        ['req_2', 'second', 30],
        ['req_2', 'third', 50],
      ],
    )
    assert.equal((lines[2]?.err as { message?: string } | undefined)?.message, 'boom')
  })

  it('a route-level level override decides in the child', async () => {
    const { root, lines } = capture('warn')
    const log = lazyChildLoggerFactory(
      root as unknown as FastifyBaseLogger,
      { reqId: 'req_3' },
      { level: 'debug' },
    )
    assert.equal(log.level, 'debug')
    log.debug('shown')
    await new Promise((r) => setImmediate(r))
    assert.deepEqual(
      lines.map((l) => l.msg),
      ['shown'],
    )
  })
})
