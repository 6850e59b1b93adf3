import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { containerIdForNetns, podContainerId, podNameOf } from "./container-ids.js";

describe("containerIdForNetns", () => {
  const vectors: Array<[string, string]> = [
    ["/var/run/netns/cnitest", "cnitool-20c433bb2b1d6ede56d6"],
    ["/var/run/netns/testing", "cnitool-77383ca0a0715733ca6f"],
    ["/run/netns/test", "cnitool-8ae22670664f2caaa6b3"],
  ];
  for (const [netns, id] of vectors) {
    test(netns, () => {
      assert.equal(containerIdForNetns(netns), id);
    });
  }
});

test("a cnitool pod's container ID gives its name back; no other ID does", () => {
  assert.equal(podContainerId("web"), "tscni-pod-web");
  assert.equal(podNameOf(podContainerId("web")), "web");
  assert.equal(podNameOf("cnitool-8ae22670664f2caaa6b3"), undefined);
});
