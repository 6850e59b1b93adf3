/**
 * `ipam.resolvConf`: a resolv.conf file turned into the result's DNS settings (nameserver, domain, search,
 * options; `#` and `;` start comments), as Go's host-local reads it.
 * @module
 */
import { readFileSync } from "node:fs";
import { ErrorCode, wrap } from "#spec/errors.js";
import type { DNS } from "#spec/result/common.js";

/** Parses resolv.conf text. Lines with fewer than two fields and unknown keywords are skipped. */
export function parseResolvConfText(text: string): DNS {
  const dns: DNS = {};
  for (const rawLine of text.split("\n")) {
    const line = rawLine.trim();
    if (line === "" || line.startsWith("#") || line.startsWith(";")) continue;
    const fields = line.split(/\s+/);
    if (fields.length < 2) continue;
    const [keyword, ...values] = fields as [string, ...string[]];
    switch (keyword) {
      case "nameserver":
        (dns.nameservers ??= []).push(values[0]!);
        break;
      case "domain":
        dns.domain = values[0]!;
        break;
      case "search":
        (dns.search ??= []).push(...values);
        break;
      case "options":
        (dns.options ??= []).push(...values);
        break;
    }
  }
  return dns;
}

/** Reads and parses the resolv.conf at `file` (code 5 when it cannot be read). */
export function parseResolvConf(file: string): DNS {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (e) {
    throw wrap(`failed to read ipam.resolvConf ${file}`, e, ErrorCode.IOFailure);
  }
  return parseResolvConfText(text);
}
