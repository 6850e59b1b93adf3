/**
 * legacy010: a test plugin that behaves like a plugin from before VERSION existed (spec 0.1.0): it answers
 * VERSION with `unknown CNI_COMMAND: VERSION` and ADD with a version-less 0.1.0 result.
 * @module
 */
import { CniError, ErrorCode } from "#spec/errors.js";

const LEGACY_RESULT = {
  ip4: { ip: "10.1.2.3/24", gateway: "10.1.2.1", routes: [{ dst: "0.0.0.0/0", gw: "10.1.0.1" }] },
  dns: { nameservers: ["8.8.8.8"], domain: "example.com" },
};

export async function main(): Promise<void> {
  const command = process.env["CNI_COMMAND"] ?? "";
  if (command === "ADD") {
    process.stdout.write(JSON.stringify(LEGACY_RESULT));
  } else if (command !== "DEL") {
    process.stdout.write(new CniError(ErrorCode.Unknown, `unknown CNI_COMMAND: ${command}`).print());
    process.exitCode = 1;
  }
}
