/**
 * CompactReader.skipValue steps over a Thrift compact-protocol value without building it (the
 * footer of a tail read). Values are encoded here by a compact-protocol writer of the test's own,
 * which knows where each value ends: skipping must stop exactly there, and any strict prefix of
 * an encoding must be refused as truncated rather than read past or half-skipped.
 */
import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { CompactReader } from '../../src/engine/parquet/thrift-reader.ts'
import * as fc from '../helpers/fc.ts'

type V =
  | { t: 'bool'; v: boolean }
  | { t: 'byte'; v: number }
  | { t: 'i16' | 'i32' | 'i64'; v: number }
  | { t: 'double'; v: number }
  | { t: 'binary'; v: Uint8Array }
  | { t: 'list'; elem: number; items: V[] }
  | { t: 'map'; k: number; v: number; pairs: [V, V][] }
  | { t: 'struct'; fields: [number, V][] }

const TYPE = { bool: 1, byte: 3, i16: 4, i32: 5, i64: 6, double: 7, binary: 8, list: 9, map: 11, struct: 12 }

function typeOf(v: V): number {
  return v.t === 'bool' ? (v.v ? 1 : 2) : TYPE[v.t]
}

function varint(out: number[], n: number): void {
  while (n >= 0x80) {
    out.push((n % 0x80) | 0x80)
    n = Math.floor(n / 0x80)
  }
  out.push(n)
}

const zz = (n: number) => (n >= 0 ? 2 * n : -2 * n - 1)

/** The value's bytes; `inContainer`: a boolean is a byte of its own (in a struct, its header). */
function encode(out: number[], v: V, inContainer: boolean): void {
  switch (v.t) {
    case 'bool':
      if (inContainer) out.push(v.v ? 1 : 2)
      return
    case 'byte':
      out.push(v.v & 0xff)
      return
    case 'i16':
    case 'i32':
    case 'i64':
      varint(out, zz(v.v))
      return
    case 'double':
      out.push(...new Uint8Array(Float64Array.of(v.v).buffer))
      return
    case 'binary':
      varint(out, v.v.length)
      out.push(...v.v)
      return
    case 'list':
      if (v.items.length < 15) out.push((v.items.length << 4) | v.elem)
      else {
        out.push(0xf0 | v.elem)
        varint(out, v.items.length)
      }
      for (const x of v.items) encode(out, x, true)
      return
    case 'map':
      varint(out, v.pairs.length)
      if (v.pairs.length === 0) return
      out.push((v.k << 4) | v.v)
      for (const [a, b] of v.pairs) {
        encode(out, a, true)
        encode(out, b, true)
      }
      return
    case 'struct': {
      let last = 0
      for (const [id, x] of v.fields) {
        const delta = id - last
        if (delta > 0 && delta <= 15) out.push((delta << 4) | typeOf(x))
        else {
          out.push(typeOf(x))
          varint(out, zz(id))
        }
        last = id
        encode(out, x, false)
      }
      out.push(0)
    }
  }
}

/** A value of the given element type (the same for every element of a list). */
function ofType(type: number, tree: fc.Arbitrary<V>): fc.Arbitrary<V> {
  switch (type) {
    case 1:
      return fc.boolean().map((v): V => ({ t: 'bool', v }))
    case 3:
      return fc.integer({ min: -128, max: 127 }).map((v): V => ({ t: 'byte', v }))
    case 5:
      return fc.integer().map((v): V => ({ t: 'i32', v }))
    case 6:
      return fc.maxSafeInteger().map((v): V => ({ t: 'i64', v: Math.trunc(v / 4) }))
    case 7:
      return fc.double().map((v): V => ({ t: 'double', v }))
    case 8:
      return fc.uint8Array({ maxLength: 40 }).map((v): V => ({ t: 'binary', v }))
    default:
      return tree.filter((v) => typeOf(v) === type || (type === 1 && v.t === 'bool'))
  }
}

const { value } = fc.letrec<{ value: V; struct: V; list: V; map: V; scalar: V }>((tie) => ({
  scalar: fc.oneof(
    fc.boolean().map((v): V => ({ t: 'bool', v })),
    fc.integer({ min: -128, max: 127 }).map((v): V => ({ t: 'byte', v })),
    fc.integer({ min: -32768, max: 32767 }).map((v): V => ({ t: 'i16', v })),
    fc.integer().map((v): V => ({ t: 'i32', v })),
    fc.maxSafeInteger().map((v): V => ({ t: 'i64', v: Math.trunc(v / 4) })),
    fc.double().map((v): V => ({ t: 'double', v })),
    fc.uint8Array({ maxLength: 40 }).map((v): V => ({ t: 'binary', v })),
  ),
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    tie('scalar'),
    tie('struct'),
    tie('list'),
    tie('map'),
  ),
  struct: fc
    .uniqueArray(fc.tuple(fc.integer({ min: 1, max: 300 }), tie('value')), {
      selector: ([id]) => id,
      maxLength: 6,
    })
    .map((fields): V => ({ t: 'struct', fields: fields.sort((a, b) => a[0] - b[0]) })),
  list: fc
    .constantFrom(1, 3, 5, 6, 7, 8)
    .chain((elem) =>
      fc
        .array(ofType(elem, tie('scalar')), { maxLength: 20 })
        .map((items): V => ({ t: 'list', elem, items })),
    ),
  map: fc
    .tuple(fc.constantFrom(1, 5, 8), fc.constantFrom(1, 3, 6, 7, 8))
    .chain(([k, v]) =>
      fc
        .array(fc.tuple(ofType(k, tie('scalar')), ofType(v, tie('scalar'))), { maxLength: 6 })
        .map((pairs): V => ({ t: 'map', k, v, pairs })),
    ),
}))

/** A top-level value as skipValue is handed it (a struct field's value: booleans have no bytes). */
function bytesOf(v: V): Uint8Array {
  const out: number[] = []
  encode(out, v, false)
  return Uint8Array.from(out)
}

describe('thrift compact skipValue', () => {
  test('stops exactly at the end of any value, after any prefix of other bytes', () => {
    fc.assert(
      fc.property(value, fc.uint8Array({ maxLength: 5 }), (v, before) => {
        const bytes = bytesOf(v)
        const buf = Uint8Array.from([...before, ...bytes, 0xaa, 0xbb])
        const r = new CompactReader(buf, before.length, buf.length, 'test')
        r.skipValue(typeOf(v))
        assert.equal(r.pos, before.length + bytes.length)
      }),
      { numRuns: 400 },
    )
  })

  test('a truncated value is refused, never read past its end', () => {
    fc.assert(
      fc.property(
        value.filter((v) => bytesOf(v).length > 0),
        fc.nat(),
        (v, cut) => {
          const bytes = bytesOf(v)
          const end = cut % bytes.length
          // The bytes after `end` exist but are outside the reader's range.
          const r = new CompactReader(bytes, 0, end, 'test')
          assert.throws(() => r.skipValue(typeOf(v)), /corrupt parquet test/)
        },
      ),
      { numRuns: 400 },
    )
  })

  test('nesting deeper than the limit is refused', () => {
    // 40 structs, each holding the next as field 1.
    const out: number[] = []
    for (let i = 0; i < 40; i++) out.push((1 << 4) | 12)
    for (let i = 0; i < 41; i++) out.push(0)
    const r = new CompactReader(Uint8Array.from(out), 0, out.length, 'test')
    assert.throws(() => r.skipValue(12), /nested too deeply/)
  })

  test('a long list header and a long-form field id are stepped over', () => {
    const v: V = {
      t: 'struct',
      fields: [
        [
          200,
          { t: 'list', elem: 5, items: Array.from({ length: 20 }, (_, i): V => ({ t: 'i32', v: i * 1000 })) },
        ],
        [201, { t: 'bool', v: true }],
      ],
    }
    const bytes = bytesOf(v)
    const r = new CompactReader(bytes, 0, bytes.length, 'test')
    r.skipValue(12)
    assert.equal(r.pos, bytes.length)
  })
})
