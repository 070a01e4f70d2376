/**
 * Reading the Thrift compact protocol (thrift.ts has the types and the writer): any struct
 * generically into `{ [fieldId]: value }`, so unknown or future fields are skipped for free.
 */
import { CT, type TStruct, type TValue } from './thrift.ts'

const MAX_DEPTH = 32
/** skipValue's stack of open containers: kind, values left, element types (synchronous: one is enough). */
const SKIP_KIND = new Int32Array(MAX_DEPTH + 1)
const SKIP_LEFT = new Float64Array(MAX_DEPTH + 1)
const SKIP_ELEM = new Int32Array(MAX_DEPTH + 1)

export class CompactReader {
  constructor(
    private readonly bytes: Uint8Array,
    public pos: number,
    private readonly end: number,
    private readonly what: string,
  ) {}

  fail(message: string): never {
    throw new Error(`corrupt parquet ${this.what}: ${message}`)
  }

  readStruct(depth = 0): TStruct {
    if (depth > MAX_DEPTH) this.fail('structs nested too deeply')
    const s: TStruct = {}
    let last = 0
    for (;;) {
      const b = this.byte()
      if (b === CT.STOP) return s
      const type = b & 0x0f
      const delta = b >> 4
      const id = delta ? last + delta : this.zigzag()
      last = id
      s[id] = this.value(type, depth)
    }
  }

  /**
   * Calls visit(id, type) for each field of a struct, positioned at the field's value, which
   * visit must consume (readValue or skipValue). For callers that want some fields unparsed.
   */
  forEachField(visit: (id: number, type: number) => void): void {
    let last = 0
    for (;;) {
      const b = this.byte()
      if (b === CT.STOP) return
      const id = b >> 4 ? last + (b >> 4) : this.zigzag()
      last = id
      visit(id, b & 0x0f)
    }
  }

  readValue(type: number): TValue {
    return this.value(type, 1)
  }

  /** The element type and count of a list, leaving the reader at its first element. */
  listHeader(): { type: number; size: number } {
    const h = this.byte()
    const size = h >> 4 === 15 ? this.varint() : h >> 4
    if (size > this.end - this.pos) this.fail(`list of ${size} elements exceeds the remaining bytes`)
    return { type: h & 0x0f, size }
  }

  /**
   * Steps over one value without building it: much cheaper than parsing for large footers. One
   * loop over an explicit stack of open containers, not a call (and a closure) per value: a tail
   * read steps over every column chunk of the row groups before it (66,000 of them in a price
   * file of the default market).
   */
  skipValue(type: number, depth = 0): void {
    const kind = SKIP_KIND
    const left = SKIP_LEFT
    const elem = SKIP_ELEM
    let sp = 0
    let t = type
    for (;;) {
      switch (t) {
        case CT.TRUE:
        case CT.FALSE:
          break
        case CT.BYTE:
          this.byte()
          break
        case CT.I16:
        case CT.I32:
        case CT.I64:
          this.varint()
          break
        case CT.DOUBLE:
          if (this.pos + 8 > this.end) this.fail('unexpected end of data')
          this.pos += 8
          break
        case CT.BINARY: {
          const n = this.varint()
          if (n > this.end - this.pos) this.fail(`binary of ${n} bytes exceeds the remaining bytes`)
          this.pos += n
          break
        }
        case CT.LIST:
        case CT.SET: {
          const h = this.byte()
          const size = h >> 4 === 15 ? this.varint() : h >> 4
          if (size > this.end - this.pos) this.fail(`list of ${size} elements exceeds the remaining bytes`)
          sp = this.openContainer(sp, depth, CT.LIST, size, h & 0x0f)
          break
        }
        case CT.MAP: {
          const size = this.varint()
          if (size === 0) break
          if (size * 2 > this.end - this.pos) this.fail(`map of ${size} entries exceeds the remaining bytes`)
          sp = this.openContainer(sp, depth, CT.MAP, 2 * size, this.byte())
          break
        }
        case CT.STRUCT:
          sp = this.openContainer(sp, depth, CT.STRUCT, 0, 0)
          break
        default:
          this.fail(`unknown field type ${t}`)
      }
      // The next value: the open struct's next field or container's next element, if any.
      for (;;) {
        if (sp === 0) return
        const top = sp - 1
        if (kind[top] === CT.STRUCT) {
          const b = this.byte()
          if (b === CT.STOP) {
            sp--
            continue
          }
          if (b >> 4 === 0) this.zigzag() // a field id too far from the previous one to be a delta
          t = b & 0x0f
          break
        }
        if (left[top] === 0) {
          sp--
          continue
        }
        const n = --left[top]
        // A map alternates key (its type in the high nibble) and value.
        t = kind[top] === CT.LIST ? elem[top] : n % 2 === 1 ? elem[top] >> 4 : elem[top] & 0x0f
        // A boolean element is a byte of its own (a boolean field lives in its header).
        if (t === CT.TRUE || t === CT.FALSE) {
          this.byte()
          continue
        }
        break
      }
    }
  }

  /** Pushes a container on skipValue's stack; the new stack size. */
  private openContainer(sp: number, depth: number, kind: number, values: number, elem: number): number {
    if (depth + sp + 1 > MAX_DEPTH) this.fail('structs nested too deeply')
    SKIP_KIND[sp] = kind
    SKIP_LEFT[sp] = values
    SKIP_ELEM[sp] = elem
    return sp + 1
  }

  private value(type: number, depth: number): TValue {
    switch (type) {
      case CT.TRUE:
        return true
      case CT.FALSE:
        return false
      case CT.BYTE:
        return (this.byte() << 24) >> 24
      case CT.I16:
      case CT.I32:
      case CT.I64:
        return this.zigzag()
      case CT.DOUBLE:
        return this.double()
      case CT.BINARY:
        return this.binary()
      case CT.LIST:
      case CT.SET:
        return this.list(depth)
      case CT.MAP:
        return this.map(depth)
      case CT.STRUCT:
        return this.readStruct(depth + 1)
      default:
        return this.fail(`unknown field type ${type}`)
    }
  }

  private list(depth: number): TValue[] {
    const h = this.byte()
    const type = h & 0x0f
    const size = h >> 4 === 15 ? this.varint() : h >> 4
    // Every element takes at least one byte, so a larger count can only come from corruption.
    if (size > this.end - this.pos) this.fail(`list of ${size} elements exceeds the remaining bytes`)
    const out: TValue[] = new Array(size)
    const isBool = type === CT.TRUE || type === CT.FALSE
    for (let i = 0; i < size; i++) out[i] = isBool ? this.byte() === CT.TRUE : this.value(type, depth + 1)
    return out
  }

  private map(depth: number): TValue[] {
    const size = this.varint()
    if (size === 0) return []
    if (size * 2 > this.end - this.pos) this.fail(`map of ${size} entries exceeds the remaining bytes`)
    const kv = this.byte()
    const out: TValue[] = []
    for (let i = 0; i < size; i++)
      out.push([this.value(kv >> 4, depth + 1), this.value(kv & 0x0f, depth + 1)])
    return out
  }

  private byte(): number {
    if (this.pos >= this.end) this.fail('unexpected end of data')
    return this.bytes[this.pos++]
  }

  private varint(): number {
    let result = 0
    let scale = 1
    for (let i = 0; i < 10; i++) {
      const b = this.byte()
      result += (b & 0x7f) * scale
      if (b < 0x80) return result
      scale *= 0x80
    }
    return this.fail('varint longer than 10 bytes')
  }

  private zigzag(): number {
    const n = this.varint()
    return n % 2 === 0 ? n / 2 : -(n + 1) / 2
  }

  private double(): number {
    if (this.pos + 8 > this.end) this.fail('unexpected end of data')
    const v = new DataView(this.bytes.buffer, this.bytes.byteOffset + this.pos, 8).getFloat64(0, true)
    this.pos += 8
    return v
  }

  private binary(): Uint8Array {
    const n = this.varint()
    if (n > this.end - this.pos) this.fail(`binary of ${n} bytes exceeds the remaining bytes`)
    const b = this.bytes.subarray(this.pos, this.pos + n)
    this.pos += n
    return b
  }
}
