import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import ts from 'typescript'

// `npm test`'s plan (scripts/test.sh): which compiled test files share a process.
//
// Node 20's runner starts a process per file. A file that only builds apps in-process spends most of
// its CPU loading modules and warming up the JIT, not testing: run alone, the median such file costs
// 2 s of CPU, most of it the loading and warming up that every file repeats. Those files run in a few
// processes instead, each a module that imports them one after another, every file inside a
// `describe` of its own name so that its hooks and its output stay its own. Every test still builds
// its own app on its own store.
//
// A file that starts child processes (the server, the CLI, PostgreSQL clusters, PgBouncer) keeps a
// process of its own and runs first: it mostly waits on its children, beside the rest.

/** What marks a test file as one that starts child processes, directly or through a helper of test/. */
export const CHILD_PROCESS_MODULES = ['node:child_process']

export interface TestPlan {
  /** Test files (paths relative to the root) that run in a process of their own. */
  alone: string[]
  /** Test files shared out among the group processes, each list in the order its group imports them. */
  groups: string[][]
}

interface Imports { local: string[], packages: string[] }

// Each helper is read and parsed once, not once for every test file that imports it.
const parsed = new Map<string, Imports>()

/** Relative imports of a source file (as `.ts` paths relative to the root) and its package imports. */
function importsOf (root: string, file: string): Imports {
  const path = join(root, file)
  const known = parsed.get(path)
  if (known !== undefined) return known
  const imports = readImports(root, file)
  parsed.set(path, imports)
  return imports
}

function readImports (root: string, file: string): Imports {
  const { importedFiles } = ts.preProcessFile(readFileSync(join(root, file), 'utf8'), true, true)
  const names = importedFiles.map(({ fileName }) => fileName)
  return {
    local: names.filter((name) => name.startsWith('.'))
      .map((name) => relative(root, resolve(root, dirname(file), name.replace(/\.js$/, '.ts')))),
    packages: names.filter((name) => !name.startsWith('.'))
  }
}

/**
 * Whether `file` (a `.ts` path under root) imports a child-process module itself or through test/
 * helpers. The walk stays inside test/: the service's own modules start no process in a test.
 */
export function startsProcesses (root: string, file: string, seen = new Set<string>()): boolean {
  if (seen.has(file)) return false
  seen.add(file)
  const { local, packages } = importsOf(root, file)
  if (packages.some((name) => CHILD_PROCESS_MODULES.includes(name))) return true
  return local.filter((path) => path.startsWith('test/')).some((path) => startsProcesses(root, path, seen))
}

/** Splits the test files (sorted `.ts` paths relative to root): those alone, and `groupCount` groups dealt in turn. */
export function planTests (root: string, files: string[], groupCount: number): TestPlan {
  const alone = files.filter((file) => startsProcesses(root, file))
  const shared = files.filter((file) => !alone.includes(file))
  const groups = Array.from({ length: Math.min(groupCount, shared.length) }, (_, index) =>
    shared.filter((_, position) => position % groupCount === index))
  return { alone, groups }
}

/** The module a group process runs: each file imported inside a describe named after it. */
export function groupModule (compiled: string[], root: string): string {
  const lines = compiled.map((file) => {
    const name = JSON.stringify(relative(root, file))
    return `describe(${name}, async () => { await import(${JSON.stringify(pathToFileURL(file).href)}) })`
  })
  return ["import { describe } from 'node:test'", ...lines, ''].join('\n')
}

/** Where `npm run build:test` compiles a test file (`test/a.test.ts` → `<build>/test/a.test.js`). */
function compiledPath (build: string, file: string): string {
  return join(build, file.replace(/\.ts$/, '.js'))
}

/**
 * `node build/scripts/test-plan.js <groups> <test files (.ts)…>`: writes the group modules to
 * build/test-groups/ and prints the files for `node --test`, one per line, the lone files first.
 */
function main (): void {
  const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..')
  const build = join(root, 'build')
  const [count, ...files] = process.argv.slice(2)
  const plan = planTests(root, files.sort(), Number(count))
  const dir = join(build, 'test-groups')
  rmSync(dir, { recursive: true, force: true })
  mkdirSync(dir, { recursive: true })
  const entries = plan.alone.map((file) => compiledPath(build, file))
  plan.groups.forEach((group, index) => {
    const entry = join(dir, `group-${index + 1}.js`)
    writeFileSync(entry, groupModule(group.map((file) => compiledPath(build, file)), root))
    entries.push(entry)
  })
  process.stdout.write(entries.map((entry) => relative(root, entry)).join('\n') + '\n')
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) main()
