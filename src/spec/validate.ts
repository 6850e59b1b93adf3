/**
 * Validation of the names a runtime hands to plugins: container IDs, network names and interface names,
 * with the codes and messages of the reference library.
 * @module
 */
import { CniError, ErrorCode } from "./errors.js";

/** Linux IFNAMSIZ is 16 including the NUL, so names have at most 15 bytes. */
export const MAX_INTERFACE_NAME_LENGTH = 15;

// The checks below are loops over char codes rather than regular expressions: every plugin call runs them, and
// compiling a pattern on first use is a measurable part of a call's start-up (bench: cold start).

/** `^[a-zA-Z0-9][a-zA-Z0-9_.-]*$`, the reference library's pattern for container IDs and network names. */
function isValidName(s: string): boolean {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    const alnum = (c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122);
    if (!alnum && (i === 0 || (c !== 95 && c !== 46 && c !== 45))) return false;
  }
  return s.length > 0;
}

/** Go's unicode.IsSpace: ASCII white space, U+0085, U+00A0 and Unicode White_Space (differs from JS \s). */
function isGoSpace(c: number): boolean {
  return (c >= 0x09 && c <= 0x0d) || c === 0x20 || c === 0x85 || c === 0xa0 || c === 0x1680 || (c >= 0x2000 && c <= 0x200a) ||
    c === 0x2028 || c === 0x2029 || c === 0x202f || c === 0x205f || c === 0x3000;
}

/** The UTF-8 length of `s` (lone surrogates count 3, as their replacement character is encoded). */
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

/** Throws (code 4) unless `containerId` is a valid container ID. */
export function validateContainerId(containerId: string): void {
  if (containerId === "") throw new CniError(ErrorCode.UnknownContainer, "missing containerID");
  if (!isValidName(containerId)) {
    throw new CniError(ErrorCode.InvalidEnvironmentVariables, "invalid characters in containerID", containerId);
  }
}

/** Throws (code 4) unless `networkName` is a valid network name. */
export function validateNetworkName(networkName: string): void {
  if (networkName === "") throw new CniError(ErrorCode.InvalidNetworkConfig, "missing network name:");
  if (!isValidName(networkName)) {
    throw new CniError(ErrorCode.InvalidNetworkConfig, "invalid characters found in network name", networkName);
  }
}

/** Throws (code 4) unless `ifName` is a valid interface name. */
export function validateInterfaceName(ifName: string): void {
  if (ifName.length === 0) throw new CniError(ErrorCode.InvalidEnvironmentVariables, "interface name is empty");
  if (utf8Length(ifName) > MAX_INTERFACE_NAME_LENGTH) {
    throw new CniError(ErrorCode.InvalidEnvironmentVariables, "interface name is too long",
      `interface name should be less than ${MAX_INTERFACE_NAME_LENGTH + 1} characters`);
  }
  if (ifName === "." || ifName === "..") throw new CniError(ErrorCode.InvalidEnvironmentVariables, "interface name is . or ..");
  for (let i = 0; i < ifName.length; i++) {
    const c = ifName.charCodeAt(i);
    if (c === 0x2f || c === 0x3a || isGoSpace(c)) {
      throw new CniError(ErrorCode.InvalidEnvironmentVariables, "interface name contains / or : or whitespace characters");
    }
  }
}
