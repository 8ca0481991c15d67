// Fails when the import graph of src/ and plugins/ has a cycle, type-only imports included: a layer
// that imports back from the one above it is a knot to untie, whatever the compiler erases.
// Run by `npm run lint` (so in CI); prints each cycle once, as a chain of files.
import { readdirSync, readFileSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import ts from 'typescript'

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..')
const ROOTS = ['src', 'plugins']

function sources (dir) {
  return readdirSync(join(root, dir), { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) return sources(path)
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts') ? [path] : []
  })
}

// Relative specifiers only: a package is never part of a cycle of ours. `./x.js` names `./x.ts`.
function importsOf (file) {
  const { importedFiles } = ts.preProcessFile(readFileSync(join(root, file), 'utf8'), true, true)
  return importedFiles
    .map(({ fileName }) => fileName)
    .filter((name) => name.startsWith('.'))
    .map((name) => relative(root, resolve(root, dirname(file), name.replace(/\.js$/, '.ts'))))
}

const files = ROOTS.flatMap(sources)
const known = new Set(files)
const graph = new Map(files.map((file) => [file, importsOf(file).filter((target) => known.has(target))]))

// Tarjan's strongly connected components: every component of more than one file (or a file importing
// itself) holds a cycle; one shortest cycle through its first file is shown.
function components () {
  let next = 0
  const index = new Map()
  const low = new Map()
  const stack = []
  const onStack = new Set()
  const found = []
  const visit = (file) => {
    index.set(file, next); low.set(file, next); next++
    stack.push(file); onStack.add(file)
    for (const target of graph.get(file)) {
      if (!index.has(target)) {
        visit(target); low.set(file,
          Math.min(low.get(file), low.get(target)))
      } else if (onStack.has(target)) {
        low.set(file, Math.min(low.get(file), index.get(target)))
      }
    }
    if (low.get(file) !== index.get(file)) return
    const component = []
    let member
    do { member = stack.pop(); onStack.delete(member); component.push(member) } while (member !== file)
    if (component.length > 1 || graph.get(file).includes(file)) found.push(component.sort())
  }
  for (const file of files) if (!index.has(file)) visit(file)
  return found
}

function shortestCycle (component) {
  const inside = new Set(component)
  const start = component[0]
  const previous = new Map([[start, null]])
  const queue = [start]
  while (queue.length > 0) {
    const file = queue.shift()
    for (const target of graph.get(file).filter((t) => inside.has(t))) {
      if (target === start) {
        const chain = [file]
        while (previous.get(chain[0]) !== null) chain.unshift(previous.get(chain[0]))
        return [...chain, start]
      }
      if (!previous.has(target)) { previous.set(target, file); queue.push(target) }
    }
  }
  return component
}

const cycles = components()
for (const component of cycles) {
  console.error(`import cycle (${component.length} files): ${shortestCycle(component).join(' → ')}`)
}
if (cycles.length > 0) process.exitCode = 1
else if (cycles.length === 0) console.log(`no import cycle among ${files.length} files of ${ROOTS.join(' and ')}`)
