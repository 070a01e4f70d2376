import { Presets, SingleBar } from 'cli-progress'
import type { Progress } from '../platform/progress.ts'

/**
 * A progress bar with ETA on a terminal; elsewhere (CI logs, pipes) one line per 10 %, with the
 * time left at the rate so far, so logs stay readable and nothing relies on carriage returns.
 */
export function createCliProgress(stream: NodeJS.WriteStream = process.stderr): Progress {
  return stream.isTTY ? ttyProgress(stream) : lineProgress(stream)
}

function ttyProgress(stream: NodeJS.WriteStream): Progress {
  let bar: SingleBar | null = null
  return {
    start(stage, total) {
      bar?.stop()
      bar = new SingleBar(
        {
          stream,
          format: `${stage.padEnd(22)} [{bar}] {percentage}% | {value}/{total} | ETA {eta_formatted}`,
          etaBuffer: 50,
        },
        Presets.shades_classic,
      )
      bar.start(total, 0)
    },
    update(done) {
      bar?.update(done)
    },
    stop() {
      bar?.stop()
      bar = null
    },
  }
}

function lineProgress(stream: NodeJS.WriteStream): Progress {
  let stage = ''
  let total = 0
  let nextPct = 0
  let started = 0
  return {
    start(s, t) {
      stage = s
      total = t
      nextPct = 10
      started = Date.now()
      stream.write(`${stage}: 0/${total}\n`)
    },
    update(done) {
      if (total <= 0) return
      const pct = (100 * done) / total
      if (pct < nextPct) return
      while (nextPct <= pct) nextPct += 10
      const elapsed = (Date.now() - started) / 1000
      // Time left at the rate so far (the stages' work is spread evenly over their units).
      const left =
        done > 0 && done < total ? `, about ${Math.ceil((elapsed * (total - done)) / done)} s left` : ''
      stream.write(`${stage}: ${done}/${total} (${Math.floor(pct)}%, ${elapsed.toFixed(1)} s${left})\n`)
    },
    stop() {
      if (total > 0) stream.write(`${stage}: done in ${((Date.now() - started) / 1000).toFixed(1)} s\n`)
      total = 0
    },
  }
}
