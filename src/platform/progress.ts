/**
 * Long-running stages report progress through this callback so the core stays free of terminal
 * concerns; the CLI turns it into a progress bar (TTY) or periodic log lines (CI, pipes).
 */
export interface Progress {
  /** Starts (or restarts) a stage with a known amount of work. */
  start(stage: string, total: number): void
  /** Sets the amount of work done in the current stage. */
  update(done: number): void
  /** Ends the current stage. */
  stop(): void
}

export const silentProgress: Progress = {
  start() {},
  update() {},
  stop() {},
}
