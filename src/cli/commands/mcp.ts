import { type Command, Option } from 'commander'
import { parseApiKey } from '../../contract/api-key.ts'
import { mcpClientConfig } from '../../platform/config.ts'
import { CONFIG_VARS } from '../../platform/config-vars.ts'
import { AppError } from '../../platform/errors.ts'

const DEFAULT_URL = CONFIG_VARS.ERM3_URL.default

/** The remote's origin: tool calls go to `origin + /path`, so a path here would be dropped. */
function originOf(raw: string, from: string): string {
  let u: URL
  try {
    u = new URL(raw)
  } catch {
    throw new AppError(
      'INVALID_INPUT',
      `${from} must be a URL such as ${DEFAULT_URL}, got ${JSON.stringify(raw)}`,
    )
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:')
    throw new AppError('INVALID_INPUT', `${from} must be an http(s) URL, got ${JSON.stringify(raw)}`)
  if (u.pathname !== '/' || u.search || u.hash)
    throw new AppError(
      'INVALID_INPUT',
      `${from} must be an origin (scheme://host[:port]), got ${JSON.stringify(raw)}`,
    )
  return u.origin
}

/**
 * The key comes from the environment only: a command line is visible to every user of the
 * machine (ps, /proc), and desktop MCP clients set per-server environment variables anyway.
 */
function checkKey(key: string | null): string {
  if (!key)
    throw new AppError(
      'INVALID_INPUT',
      'ERM3_API_KEY is not set: put your key (erm_agent_live_…) in the environment of this command',
    )
  if (!parseApiKey(key))
    throw new AppError(
      'INVALID_INPUT',
      'ERM3_API_KEY is not a valid erm3 key (expected erm_{agent|user}_{live|test}_…, with a valid checksum): check for a typo or a truncated copy',
    )
  return key
}

export function registerMcp(program: Command): void {
  program
    .command('mcp')
    .description(
      'run an MCP server on stdio for desktop clients, calling a remote erm3 with the key in ERM3_API_KEY',
    )
    .option('--url <url>', `the erm3 API (default: ERM3_URL, else ${DEFAULT_URL})`)
    .addOption(new Option('--key <key>', 'refused: use ERM3_API_KEY').hideHelp())
    .action(async (o: { url?: string; key?: string }) => {
      if (o.key !== undefined)
        throw new AppError(
          'INVALID_INPUT',
          'a key on the command line is visible to other users (ps): set ERM3_API_KEY instead, and revoke this one if the machine is shared',
        )
      const env = mcpClientConfig(process.env)
      const key = checkKey(env.apiKey)
      const baseUrl = o.url ? originOf(o.url, '--url') : originOf(env.url, 'ERM3_URL')
      const say = (line: string) => process.stderr.write(`${line}\n`)
      const u = new URL(baseUrl)
      if (u.protocol === 'http:' && !['127.0.0.1', 'localhost', '[::1]'].includes(u.hostname))
        say(`erm3 mcp: warning: ${baseUrl} is plain http; the key travels unencrypted`)
      const { runStdioMcp } = await import('../../main/mcp-stdio.ts')
      await runStdioMcp({ baseUrl, key, say })
    })
}
