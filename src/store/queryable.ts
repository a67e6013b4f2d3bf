/** The SQL interface every repository takes: a `Queryable` (one statement) or a `Db` (transactions, LISTEN). */

export interface QueryOptions {
  /**
   * Prepares the statement once per connection under this name and runs it from then on without
   * sending, parsing and planning its text again: for a statement of every run. One name, one SQL
   * text. A Queryable may ignore it (a transaction's statements run as they are).
   */
  prepare?: string;
}

export interface Queryable {
  /** Runs one parameterised statement and returns its rows. */
  query<R = Record<string, unknown>>(sql: string, params?: unknown[], options?: QueryOptions): Promise<R[]>;
}

export interface Db extends Queryable {
  readonly kind: 'pglite' | 'postgres';
  /** Runs `fn` in one transaction: committed when it resolves, rolled back when it throws. */
  transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T>;
  /** Runs a script of several statements without parameters (migrations). */
  exec(sql: string): Promise<void>;
  /**
   * LISTENs on `channel`: `onNotify` gets each payload; `onReset` is called when notifications may
   * have been missed (the listening connection was lost and re-established). Resolves to a stop function.
   */
  listen(channel: string, onNotify: (payload: string) => void, onReset?: () => void): Promise<() => Promise<void>>;
  close(): Promise<void>;
}
