import assert from 'node:assert/strict'
import { test } from 'node:test'
import { createCliProgress } from '../../src/cli/progress.ts'

/** A non-TTY stream that records what is written. */
function capture(): { stream: NodeJS.WriteStream; lines: string[] } {
  const lines: string[] = []
  const stream = {
    isTTY: false,
    write: (s: string) => lines.push(s.trimEnd()),
  } as unknown as NodeJS.WriteStream
  return { stream, lines }
}

test('progress lines say the stage, the share done and the time left at the rate so far', (t) => {
  t.mock.timers.enable({ apis: ['Date'], now: 0 })
  const { stream, lines } = capture()
  const p = createCliProgress(stream)
  p.start('build: per-stock model', 100)
  t.mock.timers.tick(4000)
  p.update(20)
  t.mock.timers.tick(12000)
  p.update(80)
  t.mock.timers.tick(4000)
  p.update(100)
  p.stop()
  assert.deepEqual(lines, [
    'build: per-stock model: 0/100',
    'build: per-stock model: 20/100 (20%, 4.0 s, about 16 s left)',
    'build: per-stock model: 80/100 (80%, 16.0 s, about 4 s left)',
    'build: per-stock model: 100/100 (100%, 20.0 s)',
    'build: per-stock model: done in 20.0 s',
  ])
})
