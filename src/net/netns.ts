/**
 * Network namespaces: a handle from a path (refusing paths that are not a network namespace), the host
 * (this process's own) namespace, and running a tool inside a namespace.
 * @module
 */
// (Synchronous node:fs: no node:fs/promises on a plugin's start path, docs/startup.md.)
import { statfsSync, statSync } from "node:fs";
import { CniError, ErrorCode, invalidEnv } from "#spec/errors.js";

const NSFS_MAGIC = 0x6e736673;
const PROC_SUPER_MAGIC = 0x9fa0;

/** The namespace path does not exist (DEL treats this as "already gone"). */
export class NetnsNotFoundError extends CniError {
  constructor(readonly path: string) {
    super(ErrorCode.InvalidEnvironmentVariables, `network namespace "${path}" (CNI_NETNS) does not exist`);
    this.name = "NetnsNotFoundError";
  }
}

/** A network namespace. `path` is undefined for the namespace this process runs in (the host side). */
export class NetNS {
  private constructor(readonly path: string | undefined) {}

  static readonly host = new NetNS(undefined);

  /**
   * The namespace at `path`, or undefined when there is none (an empty path, or a namespace that is gone): what
   * DEL works with, for which a missing container namespace is success.
   */
  static async openIfThere(path: string): Promise<NetNS | undefined> {
    if (!path) return undefined;
    try {
      return await NetNS.open(path);
    } catch (e) {
      if (e instanceof NetnsNotFoundError) return undefined;
      throw e;
    }
  }

  /** Opens a namespace by path, checking it is one. */
  static async open(path: string): Promise<NetNS> {
    let fsType: number;
    try {
      fsType = Number(statfsSync(path).type);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === "ENOENT") throw new NetnsNotFoundError(path);
      throw invalidEnv(`failed to open network namespace "${path}" (CNI_NETNS)`, e);
    }
    if (fsType !== NSFS_MAGIC && fsType !== PROC_SUPER_MAGIC) {
      throw invalidEnv(`CNI_NETNS "${path}" is not a network namespace`, `its file system magic is 0x${fsType.toString(16)}, not nsfs`);
    }
    return new NetNS(path);
  }

  /** Whether this is the plugin's own namespace (no path), where nothing needs entering. */
  get isHost(): boolean {
    return this.path === undefined;
  }

  /**
   * The command line prefix that runs `ip` in this namespace: `ip -n NAME` for namespaces under /run/netns
   * (iproute2's -n takes only names), else `nsenter --net=PATH ip`.
   */
  ipCommand(): [string, ...string[]] {
    if (!this.path) return ["ip"];
    const m = /^(?:\/var)?\/run\/netns\/([^/]+)$/.exec(this.path);
    if (m) return ["ip", "-n", m[1]!];
    return ["nsenter", `--net=${this.path}`, "--", "ip"];
  }

  /** Whether two handles are the same kernel namespace. */
  async sameAs(other: NetNS): Promise<boolean> {
    const a = statSync(this.path ?? "/proc/self/ns/net");
    const b = statSync(other.path ?? "/proc/self/ns/net");
    return a.dev === b.dev && a.ino === b.ino;
  }

  /** The namespace as error messages name it: its path, or `the host namespace`. */
  toString(): string {
    return this.path ?? "host";
  }
}
