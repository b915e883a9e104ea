/**
 * Keeps this process's own connection from writing while its writing thread (write-thread.ts)
 * holds the file's write lock. SQLite's busy handler waits for a lock by sleeping the calling
 * thread: a write on the main connection during a long write on the other one would hold the
 * event loop (up to the busy timeout) and then fail. Writes on the main connection wait here
 * instead, without holding the event loop, and run once the writing thread has committed.
 */
export class WriteGate {
  private holders = 0;
  private opened: Promise<void> | null = null;
  private open: (() => void) | null = null;

  /** True while a write on the other connection may hold the lock. */
  get held(): boolean {
    return this.holders > 0;
  }

  /**
   * Settles when no write on the other connection is under way. The caller's synchronous write
   * must follow without an `await` in between, or another may have started.
   */
  async passed(): Promise<void> {
    while (this.opened) await this.opened;
  }

  /** Marks a write on the other connection as under way; call the answer once it is over. */
  hold(): () => void {
    if (this.holders++ === 0) this.opened = new Promise((resolve) => (this.open = resolve));
    let released = false;
    return () => {
      if (released) return;
      released = true;
      if (--this.holders > 0) return;
      const open = this.open!;
      this.opened = null;
      this.open = null;
      open();
    };
  }
}
