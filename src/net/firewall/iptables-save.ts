/**
 * Rules as `iptables -S` prints them (the form iptables-restore reads back), which is how the plugins compare
 * the rules they want with those a table holds, whether read by the tool or over netlink (nfnetlink.ts).
 * @module
 */

/**
 * A word as `iptables -S` prints a comment: bare when it is only letters, digits, `_` and `-`, otherwise in
 * double quotes with `"`, `\` and `'` escaped (xtables_save_string).
 */
export function saveQuote(value: string): string {
  return /^[A-Za-z0-9_-]+$/.test(value) ? value : `"${value.replace(/["\\']/g, "\\$&")}"`;
}

/**
 * The `-A <chain> ...` line `iptables -S` prints for a rule given as iptables takes it: the target (`-j`, `-g`)
 * moved after the matches, an address without a prefix given its host prefix (`-s 10.1.2.3` prints as
 * `10.1.2.3/32`), comments quoted.
 */
export function saveLine(chain: string, args: readonly string[]): string {
  const words = args.map((w, i) => {
    if (args[i - 1] === "--comment") return saveQuote(w);
    if ((args[i - 1] === "-s" || args[i - 1] === "-d") && !w.includes("/")) return `${w}/${w.includes(":") ? 128 : 32}`;
    return w;
  });
  const target = words.findIndex((w, i) => (w === "-j" || w === "-g") && words[i - 1] !== "--comment");
  const ordered = target >= 0 ? [...words.slice(0, target), ...words.slice(target + 2), ...words.slice(target, target + 2)] : words;
  return ["-A", chain, ...ordered].join(" ");
}

/**
 * Splits an `iptables -S` line into words: double quotes group, a backslash escapes the next character
 * (as in `--comment "dnat name: \"net\" id: \"id\""`).
 */
export function splitListedRule(line: string): string[] {
  const words: string[] = [];
  let cur = "";
  let inWord = false;
  let quoted = false;
  for (let i = 0; i < line.length; i++) {
    const c = line[i]!;
    if (c === "\\" && i + 1 < line.length) {
      cur += line[++i];
      inWord = true;
    } else if (c === '"') {
      quoted = !quoted;
      inWord = true;
    } else if (!quoted && /\s/.test(c)) {
      if (inWord) words.push(cur);
      cur = "";
      inWord = false;
    } else {
      cur += c;
      inWord = true;
    }
  }
  if (inWord) words.push(cur);
  return words;
}

/** The chain an `iptables -S` rule line jumps (`-j`) or goes (`-g`) to, or its target (ACCEPT, DNAT...). */
export function lineTarget(line: string): string | undefined {
  const words = splitListedRule(line);
  const i = words.findIndex((w) => w === "-j" || w === "-g");
  return i >= 0 ? words[i + 1] : undefined;
}

/** Whether an `iptables -S` rule line jumps (`-j`) or goes (`-g`) to `chain`. */
export const jumpsTo = (line: string, chain: string): boolean => lineTarget(line) === chain;
