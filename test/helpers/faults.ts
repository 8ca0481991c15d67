import { execFileSync } from 'node:child_process'
import { mkdtempSync, rmSync, statfsSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

type Cleanup = { after: (fn: () => Promise<void>) => void }

/**
 * A fresh tmpfs of `bytes` mounted for this test (unmounted when it ends: lazily, since hooks run
 * in the order they were registered and the store on it may close after this one), so a test can
 * fill a real disk. Undefined when this process may not mount (not root): the caller skips.
 */
export function smallDisk (t: Cleanup,
  bytes: number): { dir: string, fill: (leave: number) => void, free: () => void } | undefined {
  const dir = mkdtempSync(join(tmpdir(), 'plant-store-disk-'))
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${bytes}`, 'tmpfs', dir], { stdio: 'ignore' })
  } catch {
    rmSync(dir, { recursive: true, force: true })
    return undefined
  }
  t.after(async () => {
    execFileSync('umount', ['--lazy', dir])
    rmSync(dir, { recursive: true, force: true })
  })
  const filler = join(dir, 'filler')
  return {
    dir,
    /**
     * Fills the disk until `leave` bytes are free. The store on it may take space between the look
     * and the write (SQLite's shared-memory index is allocated as it is touched): a write that
     * finds less room than the look said is made again, measured again.
     */
    fill: (leave) => {
      for (let attempt = 1; ; attempt++) {
        rmSync(filler, { force: true })
        const { bavail, bsize } = statfsSync(dir)
        try {
          writeFileSync(filler, Buffer.alloc(Math.max(0, bavail * bsize - leave)))
          return
        } catch (err) {
          if ((err as NodeJS.ErrnoException).code !== 'ENOSPC' || attempt === 5) throw err
        }
      }
    },
    /** Gives the space back. */
    free: () => { rmSync(filler, { force: true }) }
  }
}

/**
 * Limits the size of every file this process writes (RLIMIT_FSIZE, through util-linux prlimit):
 * a write beyond `bytes` fails with EFBIG (Node ignores SIGXFSZ), which SQLite reports as
 * SQLITE_IOERR_WRITE. Lifted when the test ends (or by the function returned). Undefined when
 * prlimit is not available: the caller skips.
 */
export function limitFileSize (t: Cleanup, bytes: number): (() => void) | undefined {
  const set = (limit: string): void => {
    execFileSync('prlimit', ['--pid', String(process.pid), `--fsize=${limit}:`],
      { stdio: 'ignore' })
  }
  let original: string
  try {
    original = execFileSync('prlimit',
      ['--pid', String(process.pid), '--fsize', '--raw', '--noheadings', '--output=SOFT'], { encoding: 'utf8' }).trim()
    set(String(bytes))
  } catch {
    return undefined
  }
  const lift = (): void => { set(original) }
  t.after(async () => { lift() })
  return lift
}
