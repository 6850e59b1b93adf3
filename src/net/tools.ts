/**
 * The tools the network layer runs where the kernel has no netlink for a step (iproute2, iptables, nft,
 * nsenter, conntrack, busctl): sys/exec.ts runs them, and a failure becomes a NetOpError of the kind the tool's
 * words say ("tool-missing" when it could not be run at all). Plugins never import this (layers.test.ts): they
 * reach the kernel through net/'s operations.
 * @module
 */
import { ProgramFailure, runProgram, type ToolResult } from "#sys/exec.js";
import { kindOfText, NetOpError } from "./errors.js";
import type { NetNS } from "./netns.js";

export type { ToolResult };

/**
 * Runs a tool; resolves with its output, or rejects with a NetOpError described by `operation`. A failure of
 * iproute2's `-batch` (ip, tc) names the line that failed ("Command failed -:N") as the error's step (0 for the
 * first line), and its reason is the tool's other lines, joined by "; ".
 */
export async function runTool(cmd: string, args: readonly string[], operation: string, input?: string): Promise<ToolResult> {
  try {
    return await runProgram(cmd, args, input);
  } catch (e) {
    if (!(e instanceof ProgramFailure)) throw e;
    if (e.missing) throw new NetOpError(operation, e.reason, e.exitCode, undefined, "tool-missing");
    // nsenter's failure is the failure of the tool it ran in the namespace: that tool's words.
    const tool = cmd === "nsenter" ? args[args.indexOf("--") + 1] : cmd;
    const kind = kindOfText(e.reason, tool);
    if (!args.includes("-batch")) throw new NetOpError(operation, e.reason, e.exitCode, e.stdout, kind);
    const failedLine = /^Command failed -:(\d+)/m.exec(e.reason);
    const reason = e.reason
      .split("\n")
      .filter((l) => !l.startsWith("Command failed"))
      .join("; ");
    throw new NetOpError(operation, reason, e.exitCode, e.stdout, kind, failedLine ? Number(failedLine[1]) - 1 : undefined);
  }
}

/** Runs `ip` with `args` in namespace `ns`. */
export function runIpIn(ns: NetNS, args: readonly string[], operation: string, input?: string): Promise<ToolResult> {
  const [cmd, ...prefix] = ns.ipCommand();
  return runTool(cmd, [...prefix, ...args], operation, input);
}

/** Runs a tool inside namespace `ns` (nsenter for anything but iproute2). */
export function runIn(ns: NetNS, cmd: string, args: readonly string[], operation: string, input?: string): Promise<ToolResult> {
  if (!ns.path) return runTool(cmd, args, operation, input);
  return runTool("nsenter", [`--net=${ns.path}`, "--", cmd, ...args], operation, input);
}
