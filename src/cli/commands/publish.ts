import type { Command } from 'commander'
import type { PublishResult } from '../../engine/model-store/publish.ts'
import { storeAccess } from '../../platform/config.ts'

/**
 * Uploads the current build of a local store to `target` (s3://bucket/prefix, or a directory that
 * a static HTTP server serves) and switches the target's CURRENT last. S3 settings come from the
 * usual AWS variables (README "Shared model store").
 */
export async function publishTo(localStore: string, target: string, force = false): Promise<PublishResult> {
  const [{ publishStore }, { openWriter, parseStoreLocation }] = await Promise.all([
    import('../../engine/model-store/publish.ts'),
    import('../../engine/object-store/index.ts'),
  ])
  const a = storeAccess(process.env)
  const writer = openWriter(parseStoreLocation(target), { s3: a.s3, timeoutMs: a.timeoutMs })
  return publishStore(localStore, writer, {
    force,
    onFile: (done, total) => {
      if (done === total || done % 200 === 0) process.stderr.write(`publish: ${done}/${total} files\n`)
    },
  })
}

export function describePublish(r: PublishResult, target: string): string {
  return (
    `published build ${r.build} (data as of ${r.data_as_of}) to ${target}: ` +
    `${r.uploaded} files uploaded (${(r.bytes / 1e6).toFixed(1)} MB), ` +
    `${r.copied} copied from build ${r.previous ?? '-'} on the target (${(r.copied_bytes / 1e6).toFixed(1)} MB), ` +
    `${r.skipped} already there; CURRENT switched\n`
  )
}

export function registerPublish(program: Command): void {
  program
    .command('publish')
    .description(
      "upload a local store's current build to s3://bucket/prefix or a directory served over HTTP, switching its CURRENT last",
    )
    .argument('<store>', 'local model store root (erm3 build --store)')
    .argument('<target>', 's3://bucket/prefix, or a directory (serve it with any static HTTP server)')
    .option('--force', 'upload every file even when the target already has one of the same size')
    .action(async (store: string, target: string, o: { force?: boolean }) => {
      const r = await publishTo(store, target, o.force === true)
      process.stdout.write(describePublish(r, target))
    })
}
