import { CONFIG_VARS, type ConfigVar } from '../../platform/config-vars.ts'

/** The environment a source's `…FromEnv` reads (process.env, or a test's object). */
export type SourceEnv = Record<string, string | undefined>

type Name = keyof typeof CONFIG_VARS

/** One configuration variable, parsed by its schema (src/platform/config-vars.ts) or defaulted. */
export function configValue<K extends Name>(env: SourceEnv, name: K): (typeof CONFIG_VARS)[K]['default'] {
  const spec = CONFIG_VARS[name] as ConfigVar<unknown>
  const raw = env[name]
  const value = raw === undefined || raw.trim() === '' ? spec.default : spec.parse(raw.trim(), name)
  return value as (typeof CONFIG_VARS)[K]['default']
}
