/**
 * `cnitool daemon`: runs the resident server (resident-server.ts) until SIGTERM or SIGINT, on `--socket` or,
 * started by systemd's socket unit, on the listening socket it hands over (LISTEN_FDS, LISTEN_PID);
 * `cnitool daemon status` asks a running server whether it serves and how busy it is.
 * @module
 */
import type { Command } from "commander";
import type { Io } from "../cnitool/cnitool.js";
import { takeListenFd } from "../sys/socket-activation.js";
import { callResident } from "./resident-client.js";
import { DEFAULT_SOCKET, HEALTH_PROGRAM, readBuildId, startResidentServer, WARM_UP_ROUNDS } from "./resident-server.js";

/** Adds `daemon` and `daemon status` to cnitool. */
export function addDaemonCommand(program: Command, io: Io): void {
  const daemon = program.command("daemon")
    .description("Serve plugin calls from a resident process (the launcher forwards to it; exec is the fallback)")
    .option("--socket <path>", "unix socket to listen on", DEFAULT_SOCKET)
    .option("--call-timeout <seconds>", "fail a call that runs longer than this", "300")
    .option("--warm-up <rounds>", "dry host-local rounds run at start so the first calls find compiled code (0: none)", String(WARM_UP_ROUNDS))
    .action(async (o: { socket: string; callTimeout: string; warmUp: string }) => {
      const log = (line: string) => io.stderr(`tscni daemon: ${line}\n`);
      // One bad call must never take the server down.
      process.on("uncaughtException", (e) => log(`uncaught: ${e.stack ?? e.message}`));
      process.on("unhandledRejection", (e) => log(`unhandled rejection: ${(e as Error)?.stack ?? String(e)}`));
      const listenFd = takeListenFd(io.env);
      const server = await startResidentServer({
        socketPath: o.socket, requestTimeoutMs: Number(o.callTimeout) * 1000, log, warmUpRounds: Number(o.warmUp),
        ...(listenFd !== undefined ? { listenFd } : {}),
      });
      log(`serving plugin calls on ${listenFd !== undefined ? "the socket systemd passed" : server.socketPath}`);
      await new Promise<void>((resolve) => {
        const stop = (signal: string) => {
          log(`${signal}: finishing ${server.inFlight} call(s) under way`);
          void server.close().then(resolve);
        };
        process.once("SIGTERM", () => stop("SIGTERM"));
        process.once("SIGINT", () => stop("SIGINT"));
      });
    });

  daemon.command("status")
    .description("Ask the server on --socket whether it serves, its build and its load")
    .action(async () => {
      const o = daemon.opts<{ socket: string }>();
      const outcome = await callResident(o.socket, readBuildId(), { program: HEALTH_PROGRAM, args: [], env: {}, stdin: Buffer.alloc(0) })
        .catch((e: Error) => ({ kind: "down" as const, reason: e.message }));
      if (outcome.kind === "served") io.stdout(outcome.stdout);
      else throw new Error(`no server serves this caller on ${o.socket}: ${"reason" in outcome ? outcome.reason : "it died"}`);
    });
}
