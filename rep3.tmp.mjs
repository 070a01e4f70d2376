import { buildStore } from './src/engine/build/index.ts'
import { execSync } from 'node:child_process'
execSync('rm -rf /tmp/rep/inc2 && mkdir -p /tmp/rep/inc2/builds')
const b = (await import('node:fs')).readdirSync('/tmp/rep/inc/builds').sort()[0]
execSync(`cp -al /tmp/rep/inc/builds/${b} /tmp/rep/inc2/builds/ && echo '{"build":"${b}"}' > /tmp/rep/inc2/CURRENT`)
await buildStore({ dataset: '/tmp/rep/full', store: '/tmp/rep/inc2', incremental: true })
