import assert from "node:assert/strict";
import type { AddressInfo } from "node:net";
import net from "node:net";
import { after, describe, test } from "node:test";
import type { CmdArgs } from "#skel/skel.js";
import { FakeEtcd } from "#testing/fake-etcd.js";
import { useTempDirs } from "#testing/temp.js";
import { status } from "./main.js";

const tempDir = useTempDirs();

/** STATUS's arguments for a cluster-ipam network on `endpoint` (no call budget given: the default 100 s). */
function statusArgs(endpoint: string, ipam: Record<string, unknown> = {}): CmdArgs {
  const conf = {
    cniVersion: "1.1.0",
    name: "st-net",
    type: "cluster-ipam",
    ipam: { type: "cluster-ipam", nodeName: "n1", lockDir: tempDir(), etcd: { endpoints: [endpoint], requestTimeoutMs: 300 }, ...ipam },
  };
  return {
    containerID: "",
    netns: "",
    ifName: "",
    args: "",
    path: "",
    netnsOverride: "",
    stdinData: Buffer.from(JSON.stringify(conf)),
    env: {},
    stderr: process.stderr,
  };
}

describe("cluster-ipam STATUS", () => {
  test("an etcd that takes the connection and never answers: code 50 within requestTimeoutMs, not the 100 s call budget", async () => {
    const held: net.Socket[] = [];
    const silent = net.createServer((c) => void held.push(c));
    await new Promise<void>((r) => silent.listen(0, "127.0.0.1", r));
    after(() => {
      for (const c of held) c.destroy();
      silent.close();
    });
    const t0 = Date.now();
    await assert.rejects(
      status(statusArgs(`http://127.0.0.1:${(silent.address() as AddressInfo).port}`, { ranges: [[{ subnet: "10.9.0.0/24" }]] })),
      {
        code: 50,
        msg: /etcd is unreachable: etcd did not answer within 300 ms \(requestTimeoutMs\)/,
      },
    );
    const took = Date.now() - t0;
    assert.ok(took < 2000, `answered after ${took} ms`);
  });

  test("an etcd that answers: ready while the range set has room", async () => {
    const etcd = new FakeEtcd();
    await etcd.start();
    after(() => etcd.stop());
    await status(statusArgs(etcd.endpoint, { ranges: [[{ subnet: "10.9.1.0/24" }]] }));
  });
});
