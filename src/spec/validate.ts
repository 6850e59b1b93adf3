/**
 * Validation of the names a runtime hands to plugins: container IDs, network names and interface names,
 * with the codes and messages of the reference library.
 * @module
 */
import { invalidConfig, invalidEnv, unknownContainer } from "./errors.js";

const NAME_PATTERN = /^[a-zA-Z0-9][a-zA-Z0-9_.-]*$/;
/** Linux IFNAMSIZ is 16 including the NUL, so names have at most 15 bytes. */
export const MAX_INTERFACE_NAME_LENGTH = 15;

// Go's unicode.IsSpace: ASCII white space, U+0085, U+00A0 and Unicode White_Space (differs from JS \s).
const GO_SPACE = /[\t\n\v\f\r \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]/u;

/**
 * The UTF-8 length of `s` (lone surrogates count 3, as their replacement character is encoded). Counted here, not
 * with Buffer.byteLength: every plugin call checks CNI_IFNAME before skel's checks have passed, where nothing makes a
 * Buffer (docs/startup.md).
 */
function utf8Length(s: string): number {
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x80) n += 1;
    else if (c < 0x800) n += 2;
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length && (s.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      n += 4;
      i++;
    } else n += 3;
  }
  return n;
}

/** Throws unless `containerId` is a valid container ID: code 3 when it is empty, else 4. */
export function validateContainerId(containerId: string): void {
  if (containerId === "") throw unknownContainer("missing containerID");
  if (!NAME_PATTERN.test(containerId)) {
    throw invalidEnv("invalid characters in containerID", containerId);
  }
}

/** Throws (code 7) unless `networkName` is a valid network name. */
export function validateNetworkName(networkName: string): void {
  if (networkName === "") throw invalidConfig("missing network name:");
  if (!NAME_PATTERN.test(networkName)) {
    throw invalidConfig("invalid characters found in network name", networkName);
  }
}

/** Throws (code 4) unless `ifName` is a valid interface name. */
export function validateInterfaceName(ifName: string): void {
  if (ifName.length === 0) throw invalidEnv("interface name is empty");
  if (utf8Length(ifName) > MAX_INTERFACE_NAME_LENGTH) {
    throw invalidEnv("interface name is too long", `interface name should be less than ${MAX_INTERFACE_NAME_LENGTH + 1} characters`);
  }
  if (ifName === "." || ifName === "..") throw invalidEnv("interface name is . or ..");
  if (/[/:]/.test(ifName) || GO_SPACE.test(ifName)) {
    throw invalidEnv("interface name contains / or : or whitespace characters");
  }
}
