import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Readable, Writable } from "node:stream";

/**
 * Headless Chromium driven over the DevTools protocol on a pipe
 * (--remote-debugging-pipe: commands on fd 3, answers on fd 4, each message
 * ended by a NUL): enough to load a page, type, click and read it, without a
 * WebSocket client or a browser-automation library. Waits are for a state of
 * the page (a predicate it evaluates), never for a time.
 */

// biome-ignore lint/suspicious/noExplicitAny: protocol messages are plain JSON
type Json = any;

export const CHROMIUM_PATH = ["/usr/bin/chromium", "/usr/bin/chromium-browser"];

export class Chromium {
  private nextId = 1;
  private readonly pending = new Map<number, { resolve: (value: Json) => void; reject: (error: Error) => void }>();
  private readonly listeners = new Set<(message: Json) => void>();
  private stderr = "";

  private constructor(
    private readonly child: ChildProcess,
    private readonly profile: string,
  ) {
    const input = child.stdio[4] as Readable;
    let buffer = "";
    input.setEncoding("utf8");
    input.on("data", (chunk: string) => {
      buffer += chunk;
      for (let end = buffer.indexOf("\0"); end >= 0; end = buffer.indexOf("\0")) {
        const message = JSON.parse(buffer.slice(0, end));
        buffer = buffer.slice(end + 1);
        this.dispatch(message);
      }
    });
    child.stderr?.on("data", (d) => {
      this.stderr = (this.stderr + d).slice(-4000);
    });
    child.on("exit", () => {
      for (const { reject } of this.pending.values()) reject(new Error(`chromium exited: ${this.stderr}`));
      this.pending.clear();
    });
  }

  static launch(executable: string): Chromium {
    // A profile of its own: localStorage starts empty and outlives a reload, as a person's would.
    const profile = mkdtempSync(join(tmpdir(), "camp-chromium-"));
    const child = spawn(
      executable,
      [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        "--window-size=1280,900",
        `--user-data-dir=${profile}`,
        "--remote-debugging-pipe",
        "about:blank",
      ],
      { stdio: ["ignore", "ignore", "pipe", "pipe", "pipe"] },
    );
    return new Chromium(child, profile);
  }

  private dispatch(message: Json): void {
    if (message.id !== undefined) {
      const waiter = this.pending.get(message.id);
      this.pending.delete(message.id);
      if (message.error) waiter?.reject(new Error(`${message.error.message} ${message.error.data ?? ""}`));
      else waiter?.resolve(message.result);
      return;
    }
    for (const listener of this.listeners) listener(message);
  }

  send(method: string, params: Json = {}, sessionId?: string): Promise<Json> {
    const id = this.nextId++;
    const output = this.child.stdio[3] as Writable;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      output.write(`${JSON.stringify({ id, method, params, ...(sessionId ? { sessionId } : {}) })}\0`);
    });
  }

  /** The next event of this name (for this session), whatever comes in between. */
  event(method: string, sessionId?: string): Promise<Json> {
    return new Promise((resolve) => {
      const listener = (message: Json) => {
        if (message.method === method && (!sessionId || message.sessionId === sessionId)) {
          this.listeners.delete(listener);
          resolve(message.params);
        }
      };
      this.listeners.add(listener);
    });
  }

  async newPage(): Promise<Page> {
    const { targetId } = await this.send("Target.createTarget", { url: "about:blank" });
    const { sessionId } = await this.send("Target.attachToTarget", { targetId, flatten: true });
    const page = new Page(this, sessionId);
    await page.send("Page.enable");
    await page.send("Runtime.enable");
    return page;
  }

  /** Ends the browser and removes its profile; safe to call twice, or after the browser died. */
  async close(): Promise<void> {
    if (this.child.exitCode === null && this.child.signalCode === null) {
      const exited = new Promise((done) => this.child.once("exit", done));
      await this.send("Browser.close").catch(() => this.child.kill("SIGKILL"));
      await exited;
    }
    rmSync(this.profile, { recursive: true, force: true });
  }
}

export class Page {
  /** The predicate of the wait in progress, for a failure to name. */
  waitingFor: string | undefined;

  constructor(
    private readonly browser: Chromium,
    private readonly sessionId: string,
  ) {}

  send(method: string, params: Json = {}): Promise<Json> {
    return this.browser.send(method, params, this.sessionId);
  }

  /** Loads a URL (or reloads the page) and waits for its load event. */
  async goto(url: string): Promise<void> {
    const loaded = this.browser.event("Page.loadEventFired", this.sessionId);
    await this.send("Page.navigate", { url });
    await loaded;
  }

  async reload(): Promise<void> {
    const loaded = this.browser.event("Page.loadEventFired", this.sessionId);
    await this.send("Page.reload");
    await loaded;
  }

  /** The value of an expression evaluated in the page (awaited when it is a promise). */
  async evaluate<T = unknown>(expression: string): Promise<T> {
    const { result, exceptionDetails } = await this.send("Runtime.evaluate", {
      expression,
      awaitPromise: true,
      returnByValue: true,
    });
    if (exceptionDetails) throw new Error(`in the page: ${exceptionDetails.exception?.description ?? exceptionDetails.text}`);
    return result.value as T;
  }

  /**
   * Waits until `predicate` (an expression) is truthy in the page, and returns
   * its value. The page checks it at each change of its DOM; the test's own
   * timeout bounds the wait.
   */
  async waitFor<T = unknown>(predicate: string): Promise<T> {
    this.waitingFor = predicate;
    const value = await this.evaluate<T>(`new Promise((resolve) => {
      // An element found is answered as true: a DOM node does not cross the protocol by value.
      const check = () => { try { const v = (${predicate}); return v instanceof Node ? true : v; } catch { return undefined; } };
      const first = check();
      if (first) return resolve(first);
      const observer = new MutationObserver(() => {
        const value = check();
        if (value) { observer.disconnect(); resolve(value); }
      });
      observer.observe(document, { subtree: true, childList: true, attributes: true, characterData: true });
    })`);
    this.waitingFor = undefined;
    return value;
  }

  /** Clicks the first element matching a selector (an error if there is none). */
  async click(selector: string): Promise<void> {
    await this.evaluate(`(() => {
      const element = document.querySelector(${JSON.stringify(selector)});
      if (!element) throw new Error("nothing matches " + ${JSON.stringify(selector)});
      element.scrollIntoView();
      element.click();
    })()`);
  }

  /** Types into the element a selector names, as a keyboard would (the page sees input events). */
  async type(selector: string, text: string): Promise<void> {
    await this.evaluate(`document.querySelector(${JSON.stringify(selector)}).focus()`);
    await this.send("Input.insertText", { text });
  }
}
