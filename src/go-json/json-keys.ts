/**
 * Duplicate object keys in JSON text. `JSON.parse` silently keeps the last of two equal keys; a config where
 * that hides a mistake (tuning's `sysctl` map: Go rejects a repeated sysctl) needs the raw text scanned.
 * @module
 */

const isSpace = (c: string | undefined) => c === " " || c === "\t" || c === "\n" || c === "\r";

/**
 * The keys that occur more than once in the object(s) at `path` (a list of object keys from the top) of
 * `text`, in order of their second occurrence. Every object reached by the path counts as one, so when the
 * path's own keys repeat, keys shared between the repeats are duplicates too (as Go, decoding both into the
 * same map, sees them). `text` must be valid JSON (see findJsonSyntaxError).
 */
export function duplicateKeysAt(text: string, path: readonly string[]): string[] {
  let i = 0;
  const seen = new Set<string>();
  const duplicates: string[] = [];
  const skipSpace = () => {
    while (isSpace(text[i])) i++;
  };
  const readString = (): string => {
    const start = i++;
    while (text[i] !== '"') i += text[i] === "\\" ? 2 : 1;
    i++;
    return JSON.parse(text.slice(start, i)) as string;
  };
  // Skips one value without recursion (depth is bounded only by the text).
  const skipValue = () => {
    skipSpace();
    let depth = 0;
    do {
      const c = text[i];
      if (c === '"') readString();
      else if (c === "{" || c === "[") {
        depth++;
        i++;
      } else if (c === "}" || c === "]") {
        depth--;
        i++;
      } else if (c === "," || c === ":" || isSpace(c)) i++;
      else while (i < text.length && !",]} \t\n\r".includes(text[i]!)) i++;
    } while (depth > 0);
  };
  // Walks the value at path[0..depth); recursion only follows the path.
  const walk = (depth: number) => {
    skipSpace();
    if (text[i] !== "{") return skipValue();
    i++;
    skipSpace();
    if (text[i] === "}") {
      i++;
      return;
    }
    for (;;) {
      skipSpace();
      const key = readString();
      skipSpace();
      i++; // the colon
      if (depth === path.length) {
        if (seen.has(key)) duplicates.push(key);
        else seen.add(key);
        skipValue();
      } else if (key === path[depth]) {
        walk(depth + 1);
      } else {
        skipValue();
      }
      skipSpace();
      if (text[i++] === "}") return;
    }
  };
  walk(0);
  return duplicates;
}
