import assert from "node:assert/strict";
import nodePath from "node:path";
import { describe, test } from "node:test";
import { basename, dirname, isAbsolute, join, normalize, relative, resolve } from "./posix-path.js";

// Every path of up to 6 characters from "a", "b", "." and "/": all the cases of slashes, dots and names.
function allPaths(maxLength: number): string[] {
  const out = [""];
  let level = [""];
  for (let n = 1; n <= maxLength; n++) {
    level = level.flatMap((p) => ["a", "b", ".", "/"].map((c) => p + c));
    out.push(...level);
  }
  return out;
}

const PATHS = allPaths(6);
const SHORT = allPaths(3);
const posix = nodePath.posix;

describe("posix-path gives node:path's results", () => {
  test("normalize, dirname, basename, isAbsolute on every short path", () => {
    for (const p of PATHS) {
      assert.equal(normalize(p), posix.normalize(p), `normalize(${JSON.stringify(p)})`);
      assert.equal(dirname(p), posix.dirname(p), `dirname(${JSON.stringify(p)})`);
      assert.equal(basename(p), posix.basename(p), `basename(${JSON.stringify(p)})`);
      assert.equal(isAbsolute(p), posix.isAbsolute(p), `isAbsolute(${JSON.stringify(p)})`);
    }
  });

  test("join, resolve and relative on every pair of short paths", () => {
    for (const a of SHORT) {
      for (const b of SHORT) {
        const args = `(${JSON.stringify(a)}, ${JSON.stringify(b)})`;
        assert.equal(join(a, b), posix.join(a, b), `join${args}`);
        assert.equal(resolve(a, b), posix.resolve(a, b), `resolve${args}`);
        assert.equal(relative(a, b), posix.relative(a, b), `relative${args}`);
      }
    }
    assert.equal(join(), posix.join());
    assert.equal(join("/var/lib/cni", "networks", "net1", "10.1.2.3"), "/var/lib/cni/networks/net1/10.1.2.3");
    assert.equal(relative("/sys", "/sys/devices/pci0000:00/net/eth0"), "devices/pci0000:00/net/eth0");
  });
});
