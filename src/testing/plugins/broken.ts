/**
 * broken: a test plugin that breaks three rules of the protocol, for `cnitool conformance` to catch. Its VERSION
 * answer has no cniVersion and lists "1.0" (not a spec version) and 1.0.0 twice; a successful ADD prints its result
 * twice (two JSON documents); every failure is a stack trace on stderr with nothing on stdout. Otherwise it is
 * quiet and changes nothing: DEL, CHECK, STATUS and GC succeed.
 * @module
 */
import { validateNetworkName } from "#spec/validate.js";

const CLAIMED = ["0.3.1", "0.4.0", "1.0.0"];

/** Reads stdin whole. */
async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString();
}

/** A failure as a careless plugin reports it: the exception's stack on stderr, stdout left empty. */
function crash(message: string): void {
  process.stderr.write(`${new Error(message).stack ?? message}\n`);
  process.exitCode = 1;
}

export async function main(): Promise<void> {
  const env = process.env;
  const command = env["CNI_COMMAND"] ?? "";
  if (command === "VERSION") {
    process.stdout.write(JSON.stringify({ supportedVersions: ["0.3.1", "0.4.0", "1.0", "1.0.0", "1.0.0"] }) + "\n");
    return;
  }
  const required =
    command === "ADD" || command === "CHECK"
      ? ["CNI_CONTAINERID", "CNI_NETNS", "CNI_IFNAME"]
      : command === "DEL"
        ? ["CNI_CONTAINERID", "CNI_IFNAME"]
        : ["CNI_PATH"];
  const missing = required.filter((name) => !env[name]);
  if (missing.length) return crash(`missing ${missing.join(", ")}`);
  let config: { cniVersion?: unknown; name?: unknown };
  try {
    config = JSON.parse(await readStdin()) as typeof config;
  } catch (e) {
    return crash(`bad config: ${(e as Error).message}`);
  }
  const version = String(config.cniVersion);
  if (!CLAIMED.includes(version)) return crash(`unsupported cniVersion ${version}`);
  try {
    validateNetworkName(typeof config.name === "string" ? config.name : "");
  } catch (e) {
    return crash((e as Error).message);
  }
  if (command !== "ADD") return;
  const ip = version === "1.0.0" ? { address: "10.99.0.2/24" } : { version: "4", address: "10.99.0.2/24" };
  const result = JSON.stringify({ cniVersion: version, ips: [ip] });
  process.stdout.write(`${result}\n${result}\n`);
}
