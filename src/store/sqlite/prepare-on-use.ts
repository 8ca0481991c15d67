import type Database from 'better-sqlite3'

type Statement = Database.Statement<unknown[], unknown>
type Modifier = (statement: Statement) => void

class StatementOnUse {
  readonly #db: Database.Database
  #statement: Statement | undefined
  readonly #modifiers: Modifier[] = []

  constructor (db: Database.Database, readonly source: string) {
    this.#db = db
  }

  get #compiled (): Statement {
    if (this.#statement === undefined) {
      const statement = this.#db.prepare<unknown[], unknown>(this.source)
      for (const modify of this.#modifiers) modify(statement)
      this.#statement = statement
    }
    return this.#statement
  }

  #modify (modify: Modifier): this {
    if (this.#statement === undefined) this.#modifiers.push(modify)
    else modify(this.#statement)
    return this
  }

  get reader (): boolean { return this.#compiled.reader }
  get readonly (): boolean { return this.#compiled.readonly }
  get busy (): boolean { return this.#statement?.busy ?? false }
  get database (): Database.Database { return this.#db }
  run (...params: unknown[]): Database.RunResult { return this.#compiled.run(...params) }
  get (...params: unknown[]): unknown { return this.#compiled.get(...params) }
  all (...params: unknown[]): unknown[] { return this.#compiled.all(...params) }
  iterate (...params: unknown[]): IterableIterator<unknown> { return this.#compiled.iterate(...params) }
  columns (): Database.ColumnDefinition[] { return this.#compiled.columns() }
  bind (...params: unknown[]): this { return this.#modify((statement) => { statement.bind(...params) }) }
  pluck (toggle?: boolean): this { return this.#modify((statement) => { statement.pluck(toggle ?? true) }) }
  expand (toggle?: boolean): this { return this.#modify((statement) => { statement.expand(toggle ?? true) }) }
  raw (toggle?: boolean): this { return this.#modify((statement) => { statement.raw(toggle ?? true) }) }
  safeIntegers (toggle?: boolean): this {
    return this.#modify((statement) => { statement.safeIntegers(toggle ?? true) })
  }
}

/** `prepare` deferred to each statement's first run: for stores opened often that run few statements. */
export function prepareOnUse (db: Database.Database): Database.Database {
  const prepare = (source: string): Statement => new StatementOnUse(db, source) as unknown as Statement
  const bound = new Map<PropertyKey, unknown>()
  return new Proxy(db, {
    get (target, property) {
      if (property === 'prepare') return prepare
      const value: unknown = Reflect.get(target, property, target)
      if (typeof value !== 'function') return value
      let method = bound.get(property)
      if (method === undefined) {
        method = (value as (...args: unknown[]) => unknown).bind(target)
        bound.set(property, method)
      }
      return method
    }
  })
}
