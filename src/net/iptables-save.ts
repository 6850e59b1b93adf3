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

/** The `-A <chain> ...` line `iptables -S` prints for a rule. */
export function saveLine(chain: string, args: readonly string[]): string {
  const words = args.map((w, i) => (args[i - 1] === "--comment" ? saveQuote(w) : w));
  return ["-A", chain, ...words].join(" ");
}

/** Whether an `iptables -S` rule line jumps (`-j`) or goes (`-g`) to `chain`. */
export const jumpsTo = (line: string, chain: string): boolean =>
  line.includes(` -j ${chain} `) || line.endsWith(` -j ${chain}`) || line.includes(` -g ${chain} `) || line.endsWith(` -g ${chain}`);
