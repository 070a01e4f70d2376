import assert from 'node:assert/strict'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { check, longFunctions, MAX_BODY_LINES } from '../../scripts/check-function-length.ts'

const src = fileURLToPath(new URL('../../src', import.meta.url))

/** A function whose body is `n` lines (the lines strictly between its braces). */
const fn = (name: string, n: number) =>
  `export function ${name}(): number {\n${'  let x = 1\n'.repeat(n - 1)}  return x\n}\n`

test('the source tree has no function over the limit that is not on the allow-list', () => {
  const { failing, stale } = check(src)
  assert.deepEqual(
    failing.map((f) => `${f.file}:${f.line}: ${f.name} (${f.lines} lines)`),
    [],
  )
  assert.deepEqual(stale, [])
})

test('a 101-line function fails the check; a 100-line one passes', () => {
  assert.equal(MAX_BODY_LINES, 100)
  assert.deepEqual(longFunctions('a.ts', fn('ok', 100)), [])
  const long = longFunctions('a.ts', `// header\n${fn('tooLong', 101)}`)
  assert.deepEqual(long, [{ file: 'a.ts', line: 2, name: 'tooLong', lines: 101 }])

  const dir = mkdtempSync(join(tmpdir(), 'erm3-fn-length-'))
  try {
    mkdirSync(join(dir, 'engine', 'model'), { recursive: true })
    writeFileSync(join(dir, 'engine', 'model', 'k.ts'), fn('kernel', 101) + fn('short', 3))
    const v = check(dir, {})
    assert.deepEqual(
      v.failing.map((f) => [f.name, f.lines]),
      [['kernel', 101]],
    )
    // An entry may name the file by its last folders; one matching nothing is stale.
    const allowed = check(dir, { 'model/k.ts:kernel': 'reason', 'x.ts:gone': 'reason' })
    assert.deepEqual(allowed.failing, [])
    assert.deepEqual(allowed.stale, ['x.ts:gone'])
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})

test('arrow functions and methods are measured and named; data outside functions is not', () => {
  const body = (n: number) => '    x++\n'.repeat(n)
  const text = [
    `export const arrow = () => {\n${body(101)}}`,
    `class Store {\n  method() {\n${body(101)}  }\n}`,
    `export const table = {\n${'  a: 1,\n'.repeat(200)}}`,
    `export function factory() {\n  return {\n    get() {\n${body(60)}    },\n    put() {\n${body(60)}    },\n  }\n}`,
  ].join('\n')
  assert.deepEqual(
    longFunctions('b.ts', text).map((f) => [f.name, f.lines]),
    [
      ['arrow', 101],
      ['Store.method', 101],
      // Nested functions count towards the function that contains them.
      ['factory', 126],
    ],
  )
})
