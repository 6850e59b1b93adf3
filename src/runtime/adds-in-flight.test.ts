/**
 * The ADDs under way as node GC finds them: from process environments, in a stand-in /proc (and this process's
 * own, which runs none).
 */

import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { test } from "node:test";
import { useTempDirs } from "#testing/temp.js";
import { addOfEnvironment, addsInFlight } from "./adds-in-flight.js";

const tempDir = useTempDirs();
const environ = (vars: Record<string, string>) =>
  Buffer.from(
    Object.entries(vars)
      .map(([k, v]) => `${k}=${v}\0`)
      .join(""),
  );

test("an environment with CNI_COMMAND=ADD names its attachment; any other does not", () => {
  assert.deepEqual(addOfEnvironment(environ({ PATH: "/bin", CNI_COMMAND: "ADD", CNI_CONTAINERID: "abc", CNI_IFNAME: "eth0", CNI_NETNS: "/x" })), {
    containerID: "abc",
    ifname: "eth0",
  });
  assert.equal(addOfEnvironment(environ({ CNI_COMMAND: "DEL", CNI_CONTAINERID: "abc", CNI_IFNAME: "eth0" })), undefined);
  assert.equal(addOfEnvironment(environ({ CNI_COMMAND: "ADD" })), undefined);
  assert.equal(addOfEnvironment(environ({ XCNI_COMMAND: "ADD", CNI_CONTAINERID: "abc" })), undefined);
  assert.equal(addOfEnvironment(Buffer.alloc(0)), undefined);
});

test("every process is looked at, each attachment reported once, unreadable ones skipped", async () => {
  const proc = tempDir();
  const pid = (n: number, content?: Buffer) => {
    fs.mkdirSync(path.join(proc, String(n)));
    if (content) fs.writeFileSync(path.join(proc, String(n), "environ"), content);
  };
  pid(1, environ({ HOME: "/" }));
  pid(20, environ({ CNI_COMMAND: "ADD", CNI_CONTAINERID: "c1", CNI_IFNAME: "eth0" }));
  pid(21, environ({ CNI_COMMAND: "ADD", CNI_CONTAINERID: "c1", CNI_IFNAME: "eth0" })); // a delegate of the same ADD
  pid(22, environ({ CNI_COMMAND: "ADD", CNI_CONTAINERID: "c2", CNI_IFNAME: "net1" }));
  pid(23); // exited while listed
  fs.mkdirSync(path.join(proc, "self"));
  const found = await addsInFlight(proc);
  assert.deepEqual(
    found.sort((a, b) => a.containerID.localeCompare(b.containerID)),
    [
      { containerID: "c1", ifname: "eth0" },
      { containerID: "c2", ifname: "net1" },
    ],
  );
  assert.deepEqual(await addsInFlight(path.join(proc, "missing")), []);
});

test("this machine's /proc: a process with an ADD's environment is found, and no more once it is gone", async () => {
  const id = `tscni-adds-in-flight-test-${process.pid}`;
  const mine = (found: Awaited<ReturnType<typeof addsInFlight>>) => found.filter((a) => a.containerID === id);
  assert.deepEqual(mine(await addsInFlight()), []);
  const child = spawn("sleep", ["30"], { env: { ...process.env, CNI_COMMAND: "ADD", CNI_CONTAINERID: id, CNI_IFNAME: "eth0" }, stdio: "ignore" });
  try {
    await new Promise((resolve) => child.once("spawn", resolve));
    assert.deepEqual(mine(await addsInFlight()), [{ containerID: id, ifname: "eth0" }]);
  } finally {
    child.kill("SIGKILL");
    await new Promise((resolve) => child.once("exit", resolve));
  }
  assert.deepEqual(mine(await addsInFlight()), []);
});
