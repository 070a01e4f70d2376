import { ModelStore } from './src/engine/model-store/reader.ts'
import { readdirSync } from 'node:fs'
const dir = '/tmp/rep'
const builds = readdirSync(dir + '/inc/builds').sort()
console.log(builds)
const prev = await ModelStore.open(dir + '/inc/builds/' + builds[0])
const ref = await ModelStore.open(dir + '/ref')
const sym = prev.symbols.findIndex((m) => m.asset_type === 'stock')
const a = await prev.history(sym, ['l3_rr'], 500, 512)
const b = await ref.history(sym, ['l3_rr'], 500, 512)
console.log(JSON.stringify(a.l3_rr ?? a), '\n', JSON.stringify(b.l3_rr ?? b))
const t = [new Float64Array(512)]
await prev.readManyInto(['fields/l3_rr'], sym, 384, 512, [t])
console.log(JSON.stringify(Array.from(t[0].subarray(500, 512))))
