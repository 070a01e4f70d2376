import assert from 'node:assert/strict'
import { test } from 'node:test'
import { utf8Bytes } from '../../src/platform/utf8.ts'
import * as fc from '../helpers/fc.ts'

test('utf8Bytes gives the bytes Buffer.from gives, for any text (lone surrogates included)', () => {
  fc.assert(
    fc.property(
      fc.oneof(fc.string({ unit: 'binary' }), fc.string({ unit: 'grapheme' }), fc.string()),
      (s) => {
        assert.deepEqual(utf8Bytes(s), Buffer.from(s, 'utf8'))
      },
    ),
    { numRuns: 500 },
  )
  const big = JSON.stringify(Array.from({ length: 5000 }, (_, i) => ({ t: `T${i}`, é: 'ü€😀' })))
  assert.ok(utf8Bytes(big).equals(Buffer.from(big, 'utf8')))
  assert.equal(utf8Bytes('').length, 0)
})
