/**
 * The first worksheet of an `.xlsx` file as rows of text cells: enough to read an issuer's
 * holdings sheet, not a spreadsheet library. An xlsx is a zip of XML parts; this reads
 * `xl/workbook.xml` (which sheet comes first), its relationships (where that sheet lives),
 * `xl/sharedStrings.xml` (the text cells point into it) and the sheet itself. Cells keep their
 * written text: a number cell gives its decimal text, a shared string its string (rich-text runs
 * joined), an inline string its text. Formulas give their cached value. Styles, dates stored as
 * serial numbers and merged cells are not interpreted.
 */
import { fromBufferPromise, type ZipFile } from 'yauzl'

async function entries(zip: Buffer): Promise<Map<string, Buffer>> {
  const zf: ZipFile = await fromBufferPromise(zip, { lazyEntries: true })
  const out = new Map<string, Buffer>()
  try {
    for await (const entry of zf.eachEntry()) {
      if (
        !/^xl\/(workbook\.xml|_rels\/workbook\.xml\.rels|sharedStrings\.xml|worksheets\/[^/]+\.xml)$/.test(
          entry.fileName,
        )
      )
        continue
      const chunks: Buffer[] = []
      for await (const c of await zf.openReadStreamPromise(entry)) chunks.push(c as Buffer)
      out.set(entry.fileName, Buffer.concat(chunks))
    }
  } finally {
    zf.close()
  }
  return out
}

const ENTITIES: Readonly<Record<string, string>> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" }

function unescapeXml(s: string): string {
  return s.replace(/&(#x[0-9a-fA-F]+|#\d+|amp|lt|gt|quot|apos);/g, (_, e: string) =>
    e.startsWith('#x')
      ? String.fromCodePoint(Number.parseInt(e.slice(2), 16))
      : e.startsWith('#')
        ? String.fromCodePoint(Number(e.slice(1)))
        : (ENTITIES[e] ?? ''),
  )
}

const attr = (attrs: string, name: string) => new RegExp(`\\b${name}="([^"]*)"`).exec(attrs)?.[1] ?? null

/** The text of every `<t>` inside `xml` (a shared string's rich-text runs, an inline string). */
function texts(xml: string): string {
  let s = ''
  for (const m of xml.replace(/<rPh\b[\s\S]*?<\/rPh>/g, '').matchAll(/<t(?:\s[^>]*)?>([\s\S]*?)<\/t>/g))
    s += unescapeXml(m[1] ?? '')
  return s
}

export function sharedStrings(xml: string): string[] {
  return [...xml.matchAll(/<si>([\s\S]*?)<\/si>/g)].map((m) => texts(m[1] ?? ''))
}

/** Column index (0-based) of a cell reference `B5` → 1. */
function columnOf(ref: string): number {
  let n = 0
  for (const ch of /^[A-Z]+/.exec(ref)?.[0] ?? '') n = n * 26 + (ch.charCodeAt(0) - 64)
  return n - 1
}

/** A worksheet's rows (index = row number − 1; absent rows and cells are empty). */
export function sheetRows(xml: string, strings: readonly string[]): string[][] {
  const rows: string[][] = []
  for (const row of xml.matchAll(/<row\b([^>]*?)(?:\/>|>([\s\S]*?)<\/row>)/g)) {
    const r = Number(attr(row[1] ?? '', 'r') ?? rows.length + 1) - 1
    const cells: string[] = []
    for (const c of (row[2] ?? '').matchAll(/<c\b([^>]*?)(?:\/>|>([\s\S]*?)<\/c>)/g)) {
      const a = c[1] ?? ''
      const ref = attr(a, 'r')
      const col = ref ? columnOf(ref) : cells.length
      const body = c[2] ?? ''
      const v = /<v>([\s\S]*?)<\/v>/.exec(body)?.[1]
      const type = attr(a, 't')
      let text = ''
      if (type === 's') text = strings[Number(v)] ?? ''
      else if (type === 'inlineStr') text = texts(body)
      else if (v !== undefined) text = unescapeXml(v)
      while (cells.length < col) cells.push('')
      cells[col] = text
    }
    while (rows.length < r) rows.push([])
    rows[r] = cells
  }
  return rows
}

/** The path of the workbook's first sheet, from workbook.xml and its relationships. */
function firstSheetPath(parts: ReadonlyMap<string, Buffer>): string {
  const workbook = parts.get('xl/workbook.xml')?.toString('utf8') ?? ''
  const rels = parts.get('xl/_rels/workbook.xml.rels')?.toString('utf8') ?? ''
  const sheet = /<sheet\b([^>]*)\/?>/.exec(workbook)?.[1] ?? ''
  const id = attr(sheet, 'r:id')
  for (const m of rels.matchAll(/<Relationship\b([^>]*)\/?>/g)) {
    if (attr(m[1] ?? '', 'Id') !== id) continue
    const target = attr(m[1] ?? '', 'Target') ?? ''
    return target.startsWith('/') ? target.slice(1) : `xl/${target}`
  }
  return 'xl/worksheets/sheet1.xml'
}

/** The first worksheet's rows of an xlsx file; a file that is not one is an Error saying so. */
export async function readXlsxFirstSheet(file: Uint8Array): Promise<string[][]> {
  let parts: Map<string, Buffer>
  try {
    parts = await entries(Buffer.from(file))
  } catch (e) {
    throw new Error(`not an xlsx file (not a readable zip: ${(e as Error).message})`)
  }
  const path = firstSheetPath(parts)
  const sheet = parts.get(path)
  if (!sheet) throw new Error(`not an xlsx file (no worksheet ${path})`)
  const strings = sharedStrings(parts.get('xl/sharedStrings.xml')?.toString('utf8') ?? '')
  return sheetRows(sheet.toString('utf8'), strings)
}
