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

/** Runs a tool; resolves with its output, or rejects with a NetOpError described by `operation`. */
export async function runTool(cmd: string, args: readonly string[], operation: string, input?: string): Promise<ToolResult> {
  try {
    return await runProgram(cmd, args, input);
  } catch (e) {
    if (!(e instanceof ProgramFailure)) throw e;
    // nsenter's failure is the failure of the tool it ran in the namespace: that tool's words.
    const tool = cmd === "nsenter" ? args[args.indexOf("--") + 1] : cmd;
    throw new NetOpError(operation, e.reason, e.exitCode, e.missing ? undefined : e.stdout, e.missing ? "tool-missing" : kindOfText(e.reason, tool));
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
