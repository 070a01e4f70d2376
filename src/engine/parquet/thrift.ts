/**
 * Thrift compact protocol, only as much as Parquet metadata needs: its types and the writer,
 * which emits fields in the order it is called (callers go by ascending field id). The reader is
 * in thrift-reader.ts.
 */

export const CT = {
  STOP: 0,
  TRUE: 1,
  FALSE: 2,
  BYTE: 3,
  I16: 4,
  I32: 5,
  I64: 6,
  DOUBLE: 7,
  BINARY: 8,
  LIST: 9,
  SET: 10,
  MAP: 11,
  STRUCT: 12,
} as const

export type TValue = number | boolean | Uint8Array | TValue[] | TStruct
export interface TStruct {
  [fieldId: number]: TValue | undefined
}

const utf8 = new TextEncoder()

export class CompactWriter {
  private buf: Uint8Array
  private pos = 0
  private last = 0
  private readonly stack: number[] = []

  constructor(capacity = 256) {
    this.buf = new Uint8Array(capacity)
  }

  /** Starts over, keeping the buffer (for writing many small structs such as page headers). */
  reset(): void {
    this.pos = 0
    this.last = 0
    this.stack.length = 0
  }

  /** Copy of the bytes written so far. */
  bytes(): Uint8Array {
    return this.buf.slice(0, this.pos)
  }

  i32(id: number, v: number): void {
    this.field(id, CT.I32)
    this.varint(zigzag(v))
  }

  i64(id: number, v: number): void {
    this.field(id, CT.I64)
    this.varint(zigzag(v))
  }

  bool(id: number, v: boolean): void {
    this.field(id, v ? CT.TRUE : CT.FALSE)
  }

  string(id: number, s: string): void {
    this.field(id, CT.BINARY)
    this.rawString(s)
  }

  beginStruct(id: number): void {
    this.field(id, CT.STRUCT)
    this.push()
  }

  /** An empty struct field, e.g. a LogicalType marker such as DATE or STRING. */
  emptyStruct(id: number): void {
    this.beginStruct(id)
    this.end()
  }

  /** Starts one struct element of a list (list elements carry no field header). */
  beginElement(): void {
    this.push()
  }

  /** Ends the current struct (element or field); at the top level this writes the final stop byte. */
  end(): void {
    this.byte(CT.STOP)
    this.last = this.stack.pop() ?? 0
  }

  list(id: number, elementType: number, size: number): void {
    this.field(id, CT.LIST)
    if (size < 15) this.byte((size << 4) | elementType)
    else {
      this.byte(0xf0 | elementType)
      this.varint(size)
    }
  }

  listI32(v: number): void {
    this.varint(zigzag(v))
  }

  listString(s: string): void {
    this.rawString(s)
  }

  private push(): void {
    this.stack.push(this.last)
    this.last = 0
  }

  private field(id: number, type: number): void {
    const delta = id - this.last
    if (delta > 0 && delta <= 15) this.byte((delta << 4) | type)
    else {
      this.byte(type)
      this.varint(zigzag(id))
    }
    this.last = id
  }

  private rawString(s: string): void {
    const b = utf8.encode(s)
    this.varint(b.length)
    this.ensure(b.length)
    this.buf.set(b, this.pos)
    this.pos += b.length
  }

  private byte(b: number): void {
    this.ensure(1)
    this.buf[this.pos++] = b
  }

  /** Unsigned varint for values up to 2^53 (arithmetic, not bit ops, past 31 bits). */
  private varint(v: number): void {
    this.ensure(10)
    while (v >= 0x80) {
      this.buf[this.pos++] = (v % 0x80) | 0x80
      v = Math.floor(v / 0x80)
    }
    this.buf[this.pos++] = v
  }

  private ensure(n: number): void {
    if (this.pos + n <= this.buf.length) return
    const next = new Uint8Array(Math.max(this.buf.length * 2, this.pos + n))
    next.set(this.buf.subarray(0, this.pos))
    this.buf = next
  }
}

function zigzag(v: number): number {
  return v >= 0 ? v * 2 : -v * 2 - 1
}
