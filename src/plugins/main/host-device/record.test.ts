import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { test } from "node:test";
import { useTempDirs } from "#testing/temp.js";
import { type DeviceRecord, listRecords, writeRecord } from "./record.js";

const tempDir = useTempDirs();
const record = (containerID: string, ifName: string, network = "net"): DeviceRecord => ({
  network,
  containerID,
  ifName,
  netns: `/run/netns/${containerID}`,
  host: { name: "eth9", index: 7, mtu: 1500, mac: "0a:58:0a:f4:00:01", up: true, alias: "", addresses: [] },
});

test("listRecords: every trusted record, by file name; damaged, misnamed and foreign files left out", async () => {
  const dir = tempDir();
  assert.deepEqual(await listRecords(path.join(dir, "missing")), []);
  await writeRecord(dir, record("c1", "net1"));
  await writeRecord(dir, record("c2", "eth0", "other"));
  fs.writeFileSync(path.join(dir, "c3:eth0.json"), "{not json");
  fs.writeFileSync(path.join(dir, "c4:eth0.json"), JSON.stringify(record("c5", "eth0"))); // names another attachment
  fs.writeFileSync(path.join(dir, "notes.txt"), "");
  fs.writeFileSync(path.join(dir, ".c1:net1.json.123.abcd.tmp"), JSON.stringify(record("c1", "net1")));
  assert.deepEqual(
    (await listRecords(dir)).map((r) => [r.containerID, r.ifName, r.network]),
    [
      ["c1", "net1", "net"],
      ["c2", "eth0", "other"],
    ],
  );
});
