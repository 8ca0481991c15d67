// Makes the package's bins executable after a build. tsc writes new files 0644, and `npx plant-store`
// in a clone links the bin and sets its mode only once: a rebuilt dist/ (`npm run build` removes it)
// would leave a link to a file that cannot be run ("Permission denied"). Run from the package root
// by every script that builds dist/.
import { chmodSync, readFileSync, statSync } from 'node:fs'

const { bin = {} } = JSON.parse(readFileSync('package.json', 'utf8'))
for (const file of typeof bin === 'string' ? [bin] : Object.values(bin)) {
  // Executable for whoever may read it, as npm's own bin links make it.
  const { mode } = statSync(file)
  chmodSync(file, mode | ((mode & 0o444) >> 2))
}
