/**
 * A test helper run inside a test's namespace, under Bun (traffic control over netlink) or under Node (through
 * `tc`): one phase of the bandwidth plugin's traffic-control steps on veth `v0` and IFB `b0`, printed as JSON with
 * the number of `tc` processes it ran. `add` makes the tbf and the ingress redirect, `read` reads them back,
 * `delete` removes them; run by src/net/link/tc.integration.test.ts, which crosses the runtimes between phases.
 *
 *   bun|node dist-test/testing/tc-driver.js add|read|delete
 * @module
 */
import { NetOpError } from "#net/errors.js";
import { ip } from "#net/link/links.js";
import {
  addIngressRedirect,
  addRootTbf,
  deleteIngressQdisc,
  deleteRootQdisc,
  listIngressRedirects,
  listQdiscs,
  parsePsched,
  tbfParams,
} from "#net/link/tc.js";
import { NetNS } from "#net/netns.js";
import { toolSpawnsOf } from "#sys/exec.js";

const steps: Array<{ step: string; value?: unknown; error?: string }> = [];

/** Records what a step gave, or the kind of its failure (the words differ between `tc` and the kernel). */
async function step(name: string, f: () => Promise<unknown>): Promise<void> {
  try {
    steps.push({ step: name, value: (await f()) ?? null });
  } catch (e) {
    if (!(e instanceof NetOpError)) throw e;
    steps.push({ step: name, error: e.kind });
  }
}

const host = NetNS.host;
const clock = parsePsched("000003e8 00000040 000f4240 3b9aca00");

switch (process.argv[2]) {
  case "add": {
    const veth = await ip.getLink(host, "v0");
    await step("tbf", () => addRootTbf(host, "v0", veth!.index, tbfParams(1_000_000, 80_000, clock), clock));
    await step("tbf again", () => addRootTbf(host, "v0", veth!.index, tbfParams(1_000_000, 80_000, clock), clock));
    await step("redirect", () => addIngressRedirect(host, "v0", "b0"));
    await step("redirect again", () => addIngressRedirect(host, "v0", "b0"));
    await step("redirect from a missing device", () => addIngressRedirect(host, "nope0", "b0"));
    break;
  }
  case "read":
    await step("qdiscs", () => listQdiscs(host, "v0"));
    await step("redirects", () => listIngressRedirects(host, "v0"));
    await step("ifb qdiscs", () => listQdiscs(host, "b0"));
    await step("ifb redirects", () => listIngressRedirects(host, "b0"));
    await step("qdiscs of a missing device", () => listQdiscs(host, "nope0"));
    break;
  case "delete":
    await step("root", () => deleteRootQdisc(host, "v0"));
    await step("root again", () => deleteRootQdisc(host, "v0"));
    await step("ingress", () => deleteIngressQdisc(host, "v0"));
    await step("ingress again", () => deleteIngressQdisc(host, "v0"));
    await step("root of a missing device", () => deleteRootQdisc(host, "nope0"));
    await step("qdiscs left", () => listQdiscs(host, "v0"));
    break;
  default:
    throw new Error(`tc-driver: unknown phase ${process.argv[2]}`);
}

process.stdout.write(JSON.stringify({ steps, tcRuns: toolSpawnsOf("tc") }) + "\n");
