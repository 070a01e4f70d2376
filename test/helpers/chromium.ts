import { existsSync } from 'node:fs'
import { type Browser, chromium } from 'playwright-core'

/**
 * The Debian `chromium` package driven by playwright-core (docs/architecture.md §4): headless, no sandbox
 * (CI runs as root), no GPU, no background traffic. `skip` says why a browser test cannot run.
 */
const CANDIDATES = [process.env.CHROMIUM_PATH, '/usr/bin/chromium', '/usr/bin/chromium-browser']
export const chromiumPath = CANDIDATES.find((p): p is string => !!p && existsSync(p)) ?? null

export const chromiumSkip = chromiumPath
  ? null
  : 'chromium is not installed (apt-get install -y chromium; .ci/run installs it)'

/** `args`: extra flags (e.g. `--host-resolver-rules` so no name outside loopback is ever looked up). */
export async function launchChromium(args: string[] = []): Promise<Browser> {
  if (!chromiumPath) throw new Error(chromiumSkip ?? 'no chromium')
  return chromium.launch({
    executablePath: chromiumPath,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', ...args],
  })
}
