/**
 * The pod manager's exec: a call to one of tscni's own plugins of this very build goes to the resident server
 * (docs/resident.md) as that plugin's launcher would send it — the same socket, build, request and trust (nothing
 * is sent to a listener that is not provably the server: resident-client.ts) — without starting the launcher: a
 * burst of pods then costs the manager no process per call. Everything else is exec'd as any runtime execs it: a
 * plugin that is not tscni's (no build mark in its file, launcher/launcher.c) or of another build (its server
 * would step aside for it), exec mode, no server listening (the launcher then starts one, in auto mode), a
 * refusal or a call handed back, and the calls the launcher answers or bounds itself (VERSION, about, STATUS) or
 * that have a time limit (only a process can be killed at its limit).
 * @module
 */
import { readFileSync, statSync } from "node:fs";
import type { Env } from "#invoke/args.js";
import { readBuildId } from "#invoke/build-id.js";
import { type ExecOptions, type PluginExec, RawExec, type StderrSink, settlePluginRun } from "#invoke/exec.js";
import { callResident } from "#invoke/resident-client.js";
import { residentSettings } from "#invoke/resident-mode.js";
import { DEFAULT_SOCKET } from "#invoke/resident-protocol.js";
import { failure } from "#spec/errors.js";
import { basename } from "#sys/posix-path.js";
import { currentUmask } from "#sys/umask.js";

/** The launcher's bounds (launcher.c): an answer to the hello, and the reply past the server's time limit. */
const HELLO_MS = 60_000;
const REPLY_MARGIN_MS = 10_000;

/** A launcher is tens of KiB; a larger file is not one (and is not read). */
const MAX_LAUNCHER_BYTES = 1024 * 1024;
const BUILD_MARK = /\ntscni-build-id:([0-9A-Za-z._-]{1,255})\n/;

/** The variables a launcher forwards to the server (launcher.c's `forwarded`): the plugin sees no others there. */
const forwardedName = (name: string): boolean =>
  (name.startsWith("CNI_") ||
    name.startsWith("TSCNI_") ||
    ["PATH", "DBUS_SYSTEM_BUS_ADDRESS", "XDG_RUNTIME_DIR", "TRACEPARENT", "TRACESTATE", "BAGGAGE"].includes(name)) &&
  name !== "TSCNI_STDIN_MEMFD";

/** What a served call gave, as an exec would give it. */
interface Ran {
  failure: string | undefined;
  stdout: Buffer;
  stderr: Buffer;
}

/** How a ResidentFirstExec is made; every field has a default. */
export interface ResidentFirstExecOptions {
  /** The build whose plugins go to the server (default: this library's). */
  build?: string;
  /** Where plugins' stderr goes (default: this process's stderr). */
  stderr?: StderrSink;
  /** The launcher's bounds: the server's answer to the hello (60 s), the reply past the call's time limit (10 s). */
  helloMs?: number;
  replyMarginMs?: number;
}

/** See the module comment. */
export class ResidentFirstExec implements PluginExec {
  private readonly raw: RawExec;
  private readonly builds = new Map<string, { file: string; build: string | undefined }>();
  /** Calls the server served (the rest were exec'd). */
  served = 0;

  constructor(
    private readonly opts: ResidentFirstExecOptions = {},
    private readonly build = opts.build ?? readBuildId(),
  ) {
    this.raw = new RawExec(opts.stderr);
  }

  async execPlugin(pluginPath: string, stdin: Uint8Array, env: Env, options: ExecOptions = {}): Promise<Buffer> {
    const ran = await this.throughServer(pluginPath, stdin, env, options);
    if (!ran) return this.raw.execPlugin(pluginPath, stdin, env, options);
    this.served++;
    return settlePluginRun(ran.failure, ran.stdout, ran.stderr, options.stderr ?? this.opts.stderr ?? process.stderr);
  }

  /** The call served by the server, or undefined when it is to be exec'd (see the module comment). */
  private async throughServer(pluginPath: string, stdin: Uint8Array, env: Env, options: ExecOptions): Promise<Ran | undefined> {
    const command = env["CNI_COMMAND"] ?? "";
    if (!this.build || options.signal || options.timeoutMs !== undefined) return undefined;
    if (command === "" || command === "VERSION" || command === "STATUS") return undefined;
    const socket = env["TSCNI_RESIDENT_SOCKET"] ?? DEFAULT_SOCKET;
    if (socket === "" || this.buildOf(pluginPath) !== this.build) return undefined;
    if (residentSettings(env).mode === "exec") return undefined;
    const forwarded: Record<string, string> = {};
    for (const [name, value] of Object.entries(env)) if (value !== undefined && forwardedName(name)) forwarded[name] = value;
    let outcome;
    try {
      outcome = await callResident(
        socket,
        this.build,
        {
          program: basename(pluginPath),
          args: [],
          env: forwarded,
          stdin: Buffer.from(stdin),
          cwd: process.cwd(),
          umask: currentUmask(),
        },
        { helloMs: this.opts.helloMs ?? HELLO_MS, replyMarginMs: this.opts.replyMarginMs ?? REPLY_MARGIN_MS },
      );
    } catch {
      return undefined; // nothing listens there (the launcher starts a server in auto mode)
    }
    if (outcome.kind === "refused") return undefined;
    if (outcome.kind === "died") {
      const what =
        outcome.unansweredMs !== undefined
          ? `tscni resident server (log ${socket}.log) did not answer the call within ${Math.round(outcome.unansweredMs / 1000)} s; it may still be running there`
          : `tscni resident server died during the call: ${socket}`;
      return { failure: "exit status 1", stdout: Buffer.from(failure(what).print()), stderr: Buffer.from(outcome.stderr) };
    }
    return {
      failure: outcome.status === 0 ? undefined : `exit status ${outcome.status}`,
      stdout: Buffer.from(outcome.stdout),
      stderr: Buffer.from(outcome.stderr),
    };
  }

  /** The build a plugin's file says it is (its launcher's mark), undefined for any other file; cached per file version. */
  private buildOf(pluginPath: string): string | undefined {
    let file: string;
    try {
      const s = statSync(pluginPath);
      if (!s.isFile() || s.size > MAX_LAUNCHER_BYTES) return undefined;
      file = `${s.dev}:${s.ino}:${s.size}:${s.mtimeMs}`;
    } catch {
      return undefined;
    }
    const known = this.builds.get(pluginPath);
    if (known?.file === file) return known.build;
    let build: string | undefined;
    try {
      build = BUILD_MARK.exec(readFileSync(pluginPath).toString("latin1"))?.[1];
    } catch {
      build = undefined;
    }
    this.builds.set(pluginPath, { file, build });
    return build;
  }
}
