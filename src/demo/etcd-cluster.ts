/**
 * A local etcd cluster from Debian's `etcd-server` for the cluster demo, the integration tests and the
 * benchmark: N members on 127.0.0.1 with ports nobody listens on (asked of the kernel), data directories under
 * a directory the caller gives, optionally with TLS (client certificates required). Members are started and
 * stopped by PID — never by name — and `stop()` leaves nothing running or on disk.
 * @module
 */
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { closeSync, mkdirSync, openSync, readFileSync, rmSync } from "node:fs";
import http from "node:http";
import https from "node:https";
import { createServer } from "node:net";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { messageOf } from "#spec/errors.js";

/** PEM files for a TLS cluster: the server's certificate and key, and the CA that signed the clients'. */
export interface EtcdTlsFiles {
  certFile: string;
  keyFile: string;
  caFile: string;
  /** A client certificate and key the cluster accepts (for its own health checks). */
  clientCertFile: string;
  clientKeyFile: string;
}

export interface EtcdClusterOptions {
  /** Members (default 3). */
  members?: number;
  /** Where data directories and logs go (made if missing; removed by stop()). */
  baseDir: string;
  /** A name for the cluster token and member names. */
  name?: string;
  tls?: EtcdTlsFiles;
  /** The etcd binary (default: etcd from PATH). */
  etcd?: string;
}

interface Member {
  name: string;
  clientPort: number;
  peerPort: number;
  dataDir: string;
  log: string;
  child?: ChildProcess;
}

/** Whether Debian's etcd is installed (the reason when not). */
export function etcdMissing(binary = "etcd"): string | undefined {
  return spawnSync(binary, ["--version"]).status === 0 ? undefined : "etcd is not installed (Debian package etcd-server)";
}

/** A TCP port on 127.0.0.1 that was free a moment ago (the kernel's choice). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() => (typeof address === "object" && address ? resolve(address.port) : reject(new Error("no port"))));
    });
  });
}

export class EtcdCluster {
  private constructor(
    private readonly options: Required<Pick<EtcdClusterOptions, "baseDir" | "name" | "etcd">> & EtcdClusterOptions,
    private readonly members: Member[],
  ) {}

  /** Starts the members and waits until the cluster has a leader (at most `timeoutMs`). */
  static async start(options: EtcdClusterOptions, timeoutMs = 20_000): Promise<EtcdCluster> {
    const count = options.members ?? 3;
    const name = options.name ?? "tscni";
    mkdirSync(options.baseDir, { recursive: true });
    const members: Member[] = [];
    const taken = new Set<number>();
    const port = async () => {
      for (;;) {
        const p = await freePort();
        if (!taken.has(p)) {
          taken.add(p);
          return p;
        }
      }
    };
    for (let i = 0; i < count; i++) {
      members.push({
        name: `${name}-${i}`,
        clientPort: await port(),
        peerPort: await port(),
        dataDir: path.join(options.baseDir, `member-${i}`),
        log: path.join(options.baseDir, `member-${i}.log`),
      });
    }
    const cluster = new EtcdCluster({ etcd: "etcd", name, ...options }, members);
    try {
      for (let i = 0; i < count; i++) cluster.startMember(i, true);
      await cluster.waitHealthy(timeoutMs);
    } catch (e) {
      cluster.stop();
      throw e;
    }
    return cluster;
  }

  private get scheme(): string {
    return this.options.tls ? "https" : "http";
  }

  /** The client URLs, one per member. */
  get endpoints(): string[] {
    return this.members.map((m) => `${this.scheme}://127.0.0.1:${m.clientPort}`);
  }

  /** The PIDs of the running members. */
  get pids(): number[] {
    return this.members.flatMap((m) => (m.child?.pid !== undefined && m.child.exitCode === null && m.child.signalCode === null ? [m.child.pid] : []));
  }

  /** (Re)starts member `i` with its data directory (a restarted member rejoins with what it had). */
  startMember(i: number, initial = false): void {
    const m = this.members[i]!;
    if (m.child && m.child.exitCode === null && m.child.signalCode === null) return;
    const tls = this.options.tls;
    const args = [
      "--name",
      m.name,
      "--data-dir",
      m.dataDir,
      "--listen-client-urls",
      `${this.scheme}://127.0.0.1:${m.clientPort}`,
      "--advertise-client-urls",
      `${this.scheme}://127.0.0.1:${m.clientPort}`,
      "--listen-peer-urls",
      `http://127.0.0.1:${m.peerPort}`,
      "--initial-advertise-peer-urls",
      `http://127.0.0.1:${m.peerPort}`,
      "--initial-cluster",
      this.members.map((x) => `${x.name}=http://127.0.0.1:${x.peerPort}`).join(","),
      "--initial-cluster-token",
      `${this.options.name}-${this.members[0]!.peerPort}`,
      "--initial-cluster-state",
      "new",
      // Elections within a second, so a killed leader is replaced quickly; no metrics or pprof beyond the basics.
      "--heartbeat-interval",
      "50",
      "--election-timeout",
      "500",
      ...(tls ? ["--cert-file", tls.certFile, "--key-file", tls.keyFile, "--trusted-ca-file", tls.caFile, "--client-cert-auth"] : []),
    ];
    const log = openSync(m.log, initial ? "w" : "a");
    try {
      // Its own process group, so a terminal's Ctrl-C reaches only us and stop() decides what happens to it.
      m.child = spawn(this.options.etcd, args, {
        stdio: ["ignore", log, log],
        detached: true,
        env: { PATH: process.env["PATH"] ?? "/usr/bin:/bin" },
      });
      m.child.on("error", () => undefined);
      m.child.unref();
    } finally {
      closeSync(log);
    }
  }

  /** Sends `signal` to member `i` (by PID) and waits for it to exit. */
  async kill(i: number, signal: NodeJS.Signals = "SIGKILL"): Promise<void> {
    const child = this.members[i]?.child;
    if (!child?.pid || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
    process.kill(child.pid, signal);
    await Promise.race([exited, sleep(10_000)]);
  }

  /** Stops every member (SIGTERM, then SIGKILL), keeping the data. */
  async stopMembers(): Promise<void> {
    await Promise.all(
      this.members.map(async (_, i) => {
        const child = this.members[i]!.child;
        if (!child?.pid || child.exitCode !== null || child.signalCode !== null) return;
        const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
        process.kill(child.pid, "SIGTERM");
        if (await Promise.race([exited.then(() => true), sleep(5_000).then(() => false)])) return;
        await this.kill(i, "SIGKILL");
      }),
    );
  }

  /** Starts every stopped member again and waits for a leader. */
  async restart(timeoutMs = 20_000): Promise<void> {
    for (let i = 0; i < this.members.length; i++) this.startMember(i);
    await this.waitHealthy(timeoutMs);
  }

  /** Waits until a member answers /health with a leader elected. */
  async waitHealthy(timeoutMs = 20_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    let last = "";
    while (Date.now() < deadline) {
      for (const m of this.members) {
        if (!m.child || m.child.exitCode !== null) continue;
        try {
          const body = await this.get(`${this.scheme}://127.0.0.1:${m.clientPort}/health`);
          if (/"health":\s*"true"/.test(body)) return;
          last = body;
        } catch (e) {
          last = messageOf(e);
        }
      }
      const dead = this.members.filter((m) => m.child && (m.child.exitCode !== null || m.child.signalCode !== null));
      if (dead.length === this.members.length) break;
      await sleep(100);
    }
    const logs = this.members.map((m) => {
      try {
        return `${m.name}: ${readFileSync(m.log, "utf8").trim().split("\n").slice(-3).join("\n  ")}`;
      } catch {
        return `${m.name}: no log`;
      }
    });
    throw new Error(`etcd cluster not healthy within ${timeoutMs} ms (${last})\n${logs.join("\n")}`);
  }

  /** A GET on a member, with the cluster's client certificate when it has TLS. */
  get(url: string): Promise<string> {
    const tls = this.options.tls;
    return new Promise((resolve, reject) => {
      const options = tls
        ? { cert: readFileSync(tls.clientCertFile), key: readFileSync(tls.clientKeyFile), ca: readFileSync(tls.caFile), agent: false as const }
        : { agent: false as const };
      const req = (url.startsWith("https:") ? https : http).get(url, { ...options, timeout: 1000 }, (res) => {
        let body = "";
        res
          .setEncoding("utf8")
          .on("data", (c: string) => (body += c))
          .on("end", () => resolve(body));
      });
      req.on("timeout", () => req.destroy(new Error("timed out")));
      req.on("error", reject);
    });
  }

  /** The sum of a Prometheus counter over the running members (e.g. KV requests handled, for round trips). */
  async metric(pattern: RegExp): Promise<number> {
    let total = 0;
    for (const [i, m] of this.members.entries()) {
      if (!this.pids.includes(m.child?.pid ?? -1)) continue;
      const text = await this.get(`${this.endpoints[i]}/metrics`).catch(() => "");
      for (const line of text.split("\n")) if (pattern.test(line)) total += Number(line.slice(line.lastIndexOf(" ") + 1)) || 0;
    }
    return total;
  }

  /** Stops every member by PID and removes the data directories and logs (synchronously, safe in cleanups). */
  stop(): void {
    for (const m of this.members) {
      const pid = m.child?.pid;
      if (pid !== undefined && m.child!.exitCode === null && m.child!.signalCode === null) {
        try {
          process.kill(pid, "SIGKILL");
        } catch {
          /* already gone */
        }
        // Wait (briefly) until the PID is gone, so the ports and files are free when we return.
        for (let i = 0; i < 200; i++) {
          let state: string | undefined;
          try {
            state = readFileSync(`/proc/${pid}/stat`, "utf8").replace(/^.*\) /s, "")[0];
          } catch {
            state = undefined;
          }
          if (state === undefined || state === "Z") break; // gone, or dead and waiting for us to reap it
          spawnSync("sleep", ["0.01"]);
        }
      }
    }
    for (const m of this.members) {
      rmSync(m.dataDir, { recursive: true, force: true });
      rmSync(m.log, { force: true });
    }
  }
}
