/**
 * A string's UTF-8 bytes in a new Buffer, for response-sized strings.
 *
 * `Buffer.from(string)` takes a native path that, on the VMs this service runs on, costs about
 * 0.9 ms for a 195 KB JSON body (the memory comes back from the kernel fresh every time), while
 * sizing first and writing into `Buffer.allocUnsafe` memory costs about 0.05 ms for the same
 * bytes (medians of 300 runs, Node 20). The bytes are identical; every byte is written.
 */
export function utf8Bytes(s: string): Buffer {
  const out = Buffer.allocUnsafe(Buffer.byteLength(s, 'utf8'))
  out.write(s, 0, 'utf8')
  return out
}
