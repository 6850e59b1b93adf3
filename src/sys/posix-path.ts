/**
 * The POSIX path operations the plugins use (join, dirname, basename, relative, resolve, isAbsolute, the
 * search-path delimiter), with node:path's results (posix-path.test.ts compares them over every short path).
 * Not node:path itself, which is not loaded on a plugin's start path (docs/startup.md); code that runs once per host
 * (cnitool, the runtime side, the dhcp daemon) keeps node:path.
 * @module
 */

const SLASH = 0x2f;

/** What separates the directories of a search path (CNI_PATH, PATH). */
export const delimiter = ":";

/** `p` with `.` and `..` resolved and repeated slashes folded; a trailing slash is kept, "" is ".". */
export function normalize(p: string): string {
  if (p === "") return ".";
  const absolute = p.charCodeAt(0) === SLASH;
  const trailingSlash = p.charCodeAt(p.length - 1) === SLASH;
  const out: string[] = [];
  for (const segment of p.split("/")) {
    if (segment === "" || segment === ".") continue;
    if (segment === "..") {
      if (out.length > 0 && out[out.length - 1] !== "..") out.pop();
      else if (!absolute) out.push("..");
      continue;
    }
    out.push(segment);
  }
  let body = out.join("/");
  if (body === "" && !absolute) body = ".";
  if (body !== "" && trailingSlash) body += "/";
  return absolute ? "/" + body : body;
}

/** The parts joined with "/" and normalized ("." when there is nothing). */
export function join(...parts: string[]): string {
  const joined = parts.filter((part) => part !== "").join("/");
  return joined === "" ? "." : normalize(joined);
}

export const isAbsolute = (p: string): boolean => p.charCodeAt(0) === SLASH;

/** An absolute path: the parts from the right until one is absolute, on top of the working directory. */
export function resolve(...parts: string[]): string {
  let resolved = "";
  for (let i = parts.length - 1; i >= -1 && !isAbsolute(resolved); i--) {
    const part = i >= 0 ? parts[i]! : process.cwd();
    if (part !== "") resolved = resolved === "" ? part : `${part}/${resolved}`;
  }
  const normalized = normalize(resolved);
  return normalized.length > 1 && normalized.endsWith("/") ? normalized.slice(0, -1) : normalized;
}

/** The path from `from` to `to` (both resolved first); "" when they are the same. */
export function relative(from: string, to: string): string {
  const fromParts = resolve(from)
    .split("/")
    .filter((s) => s !== "");
  const toParts = resolve(to)
    .split("/")
    .filter((s) => s !== "");
  let common = 0;
  while (common < fromParts.length && common < toParts.length && fromParts[common] === toParts[common]) common++;
  return [...fromParts.slice(common).map(() => ".."), ...toParts.slice(common)].join("/");
}

/** Everything before the last element (trailing slashes ignored), as node:path words it. */
export function dirname(p: string): string {
  if (p === "") return ".";
  const absolute = p.charCodeAt(0) === SLASH;
  let end = -1;
  let seenName = false;
  for (let i = p.length - 1; i >= 1; i--) {
    if (p.charCodeAt(i) === SLASH) {
      if (seenName) {
        end = i;
        break;
      }
    } else {
      seenName = true;
    }
  }
  if (end === -1) return absolute ? "/" : ".";
  if (absolute && end === 1) return "//";
  return p.slice(0, end);
}

/** The last element (trailing slashes ignored). */
export function basename(p: string): string {
  let end = p.length;
  while (end > 0 && p.charCodeAt(end - 1) === SLASH) end--;
  return p.slice(p.lastIndexOf("/", end - 1) + 1, end);
}
