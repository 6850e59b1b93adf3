/**
 * Starting a program that makes itself a daemon (dnsmasq, as dnsname runs it): its first process forks the daemon
 * and exits once the daemon is ready (pidfile written, sockets bound), so the start is done when that process
 * exits with 0. Its failure carries what it printed. Plugins start daemons through this, never through the tool
 * runner itself (layers.test.ts).
 * @module
 */
import { ProgramFailure, runProgram } from "./exec.js";

/** Runs `program` with `args` and resolves when its first process has exited with 0 (the daemon it forked runs on). */
export async function startDaemon(program: string, args: readonly string[], operation: string): Promise<void> {
  try {
    await runProgram(program, args);
  } catch (e) {
    throw e instanceof ProgramFailure ? new Error(`${operation}: ${e.reason}`, { cause: e }) : e;
  }
}
