import { buildStore } from './src/engine/build/index.ts'
import { readDataset } from './src/engine/data/dataset-reader.ts'
import { writeDataset } from './src/engine/data/dataset-writer.ts'
import { synthesizeDataset } from './src/engine/data/synthesize.ts'
import { readFileSync } from 'node:fs'
const dir = '/tmp/rep'
await synthesizeDataset(dir + '/full', { seed: 33, stocks: 50, start: '2014-01-02', end: '2016-12-30', fundamentals: false })
const { dataset: full } = await readDataset(dir + '/full')
const T0 = Number(process.argv[2] ?? 512)
const cut = (p) => p?.map((s) => s.slice(0, T0)) ?? null
await writeDataset({ ...full, calendar: full.calendar.slice(0, T0), prices: { adj_close: cut(full.prices.adj_close), close: cut(full.prices.close), volume: cut(full.prices.volume), shares_out: cut(full.prices.shares_out) }, series: full.series ? { ...full.series, values: full.series.values.map((v) => v.slice(0, T0)) } : null }, dir + '/pre')
await buildStore({ dataset: dir + '/pre', store: dir + '/inc' })
await buildStore({ dataset: dir + '/full', store: dir + '/inc', incremental: true })
await buildStore({ dataset: dir + '/full', store: dir + '/ref' })
const cur = (s) => dir + '/' + s + '/builds/' + JSON.parse(readFileSync(dir + '/' + s + '/CURRENT', 'utf8')).build
for (const f of ['products/reversion_z/c/2/0', 'fields/l3_rr/c/2/0']) {
  let a, b
  try { a = new Float64Array(readFileSync(cur('inc') + '/' + f).buffer.slice(0)); b = new Float64Array(readFileSync(cur('ref') + '/' + f).buffer.slice(0)) } catch (e) { console.log(f, 'missing', e.message); continue }
  const diffs = []
  for (let i = 0; i < a.length; i++) if (!Object.is(a[i], b[i])) diffs.push([Math.floor(i / 256), 512 + (i % 256), a[i], b[i]])
  console.log(f, a.length, 'diffs', diffs.length, JSON.stringify(diffs.slice(0, 8)))
}
