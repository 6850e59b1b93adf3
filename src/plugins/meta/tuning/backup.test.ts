import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { test } from "node:test";
import { useTempDirs } from "#testing/temp.js";
import { backupFile, networkFileOf, removeBackup, staleBackups, writeBackup, writeNetworkOf } from "./backup.js";

const tempDir = useTempDirs();

test("the network file sits beside the backup, and goes with it", async () => {
  const dir = tempDir();
  const file = backupFile(dir, "c1", "eth0");
  assert.equal(networkFileOf(file), path.join(dir, "c1_eth0.network"));
  await writeNetworkOf(file, "net1");
  await writeBackup(file, { mtu: 1500 });
  assert.equal(fs.readFileSync(networkFileOf(file), "utf8"), "net1\n");
  assert.equal(fs.statSync(networkFileOf(file)).mode & 0o777, 0o600);
  await removeBackup(file);
  assert.deepEqual(fs.readdirSync(dir), []);
});

test("staleBackups: this network's backups whose attachment is not valid; Go's (no network file) never", async () => {
  const dir = tempDir();
  const plant = async (containerID: string, ifName: string, network?: string) => {
    const file = backupFile(dir, containerID, ifName);
    if (network) await writeNetworkOf(file, network);
    await writeBackup(file, { mtu: 1500 });
    return file;
  };
  await plant("c1", "eth0", "net1");
  const stale = await plant("c2", "eth0", "net1");
  await plant("c2", "net1", "other");
  await plant("c3", "eth0"); // Go's
  const orphan = backupFile(dir, "c4", "eth0");
  await writeNetworkOf(orphan, "net1"); // an ADD killed before its backup
  const found = await staleBackups(dir, "net1", [{ containerID: "c1", ifname: "eth0" }]);
  assert.deepEqual(found.sort(), [stale, orphan].sort());
  assert.deepEqual(
    await staleBackups(dir, "net1", [
      { containerID: "c1", ifname: "eth0" },
      { containerID: "c2", ifname: "eth0" },
      { containerID: "c4", ifname: "eth0" },
    ]),
    [],
  );
  assert.deepEqual(await staleBackups(path.join(dir, "missing"), "net1", []), []);
});
