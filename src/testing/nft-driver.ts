/**
 * A test helper run under Bun inside a test's namespace (src/net/netlink/nfnetlink.integration.test.ts):
 * `bun dist-test/testing/nft-driver.js list 4|6 TABLE CHAIN...|all` prints net/netlink/nfnetlink.ts's listing as JSON (handles
 * as strings); `... delete 4|6 TABLE RULE-HANDLES(chain:handle,...) CHAINS(a,b)` deletes them in one batch and
 * prints "ok" or the error; `... add 4|6 TABLE JSON` adds `{ chains, rules: [{ chain, args, first }] }` in one
 * transaction and prints "ok", "not encodable" or the error.
 * @module
 */
import { listIptablesNft, NFPROTO_IPV4, NFPROTO_IPV6, nftAddRules, nftDelete, type RuleToAdd } from "#net/netlink/nfnetlink.js";

const [verb, family, table, ...rest] = process.argv.slice(2);
const nfproto = family === "6" ? NFPROTO_IPV6 : NFPROTO_IPV4;
if (verb === "list") {
  const listing = await listIptablesNft(nfproto, table!, rest[0] === "all" ? "all" : rest);
  console.log(JSON.stringify(listing, (_, v: unknown) => (typeof v === "bigint" ? String(v) : v)));
} else if (verb === "add") {
  const spec = JSON.parse(rest[0]!) as { chains: string[]; rules: RuleToAdd[] };
  try {
    console.log((await nftAddRules(nfproto, table!, spec.chains, spec.rules, "test addition")) ? "ok" : "not encodable");
  } catch (e) {
    console.log(`error: ${(e as Error).message}`);
  }
} else {
  const rules = (rest[0] ?? "")
    .split(",")
    .filter(Boolean)
    .map((r) => {
      const [chain, handle] = r.split(":");
      return { chain: chain!, handle: BigInt(handle!) };
    });
  try {
    await nftDelete(nfproto, table!, rules, (rest[1] ?? "").split(",").filter(Boolean), "test deletion");
    console.log("ok");
  } catch (e) {
    console.log(`error: ${(e as Error).message}`);
  }
}
