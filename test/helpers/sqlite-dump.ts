import { mkdtempSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Database from 'better-sqlite3'

/** A released database rebuilt from its dump in test/fixtures/ (a SQL text file, so no database file is tracked). */
export function sqliteFromDump (fixture: string, prefix: string): string {
  const file = join(mkdtempSync(join(tmpdir(), prefix)), 'plants.db')
  const db = new Database(file)
  try {
    db.exec(readFileSync(new URL(`../../../test/fixtures/${fixture}`, import.meta.url), 'utf8'))
  } finally {
    db.close()
  }
  return file
}
