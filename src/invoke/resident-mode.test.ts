import assert from "node:assert/strict";
import { test } from "node:test";
import { parseSize, residentSettings } from "./resident-mode.js";

const files = (map: Record<string, string>) => (f: string) => {
  const text = map[f];
  if (text === undefined) throw Object.assign(new Error("ENOENT"), { code: "ENOENT" });
  return text;
};

test("residentSettings: the mode from TSCNI_RESIDENT, else the file's first word, else auto; any other word is exec, said", () => {
  assert.deepEqual((({ mode, modeFrom }) => ({ mode, modeFrom }))(residentSettings({}, files({}))), { mode: "auto", modeFrom: "the default" });
  const conf = files({ "/etc/tscni/resident": "# the operator's switch\n  manual \nrepair off\nmemory-max 256M # a cap\n" });
  const s = residentSettings({}, conf);
  assert.deepEqual(
    [s.mode, s.modeFrom, s.repair, s.repairFrom, s.memoryMax, s.problems],
    ["manual", "/etc/tscni/resident", false, "/etc/tscni/resident", 256 << 20, []],
  );
  assert.equal(residentSettings({ TSCNI_RESIDENT: "exec" }, conf).mode, "exec", "the caller's word wins");
  for (const word of ["off", "disabled", "no", "Exec", "false", "0"]) {
    const env = residentSettings({ TSCNI_RESIDENT: word }, files({}));
    assert.equal(env.mode, "exec", word);
    assert.equal(env.warning, `resident mode "${word}" in TSCNI_RESIDENT is not one of auto, manual, exec: running in exec mode`);
    const file = residentSettings({}, files({ "/etc/tscni/resident": `${word}\n` }));
    assert.deepEqual([file.mode, file.modeFrom], ["exec", "/etc/tscni/resident"], word);
    assert.match(file.warning!, new RegExp(`"${word}" in /etc/tscni/resident`));
  }
  const other = residentSettings(
    { TSCNI_RESIDENT_CONF: "/x", TSCNI_RESIDENT_REPAIR: "maybe", TSCNI_RESIDENT_MEMORY_MAX: "lots" },
    files({ "/x": "auto" }),
  );
  assert.deepEqual([other.mode, other.repair, other.memoryMax], ["auto", true, undefined]);
  assert.equal(other.problems.length, 2, other.problems.join("; "));
});

test("residentSettings: exec-slots from TSCNI_EXEC_SLOTS, else the file, else two per CPU; a bad word is said", () => {
  assert.deepEqual((({ execSlots, execSlotsFrom }) => ({ execSlots, execSlotsFrom }))(residentSettings({}, files({}))), {
    execSlots: undefined,
    execSlotsFrom: "the default (two per CPU)",
  });
  const conf = files({ "/etc/tscni/resident": "exec\nexec-slots 6\n" });
  assert.deepEqual([residentSettings({}, conf).execSlots, residentSettings({}, conf).execSlotsFrom], [6, "/etc/tscni/resident"]);
  assert.equal(residentSettings({ TSCNI_EXEC_SLOTS: "off" }, conf).execSlots, "off", "the caller's word wins");
  assert.equal(residentSettings({ TSCNI_EXEC_SLOTS: "0" }, conf).execSlots, "off");
  assert.equal(residentSettings({ TSCNI_EXEC_SLOTS: "100000" }, conf).execSlots, 128);
  const bad = residentSettings({ TSCNI_EXEC_SLOTS: "many" }, files({}));
  assert.equal(bad.execSlots, undefined);
  assert.deepEqual(bad.problems, ['exec-slots "many" in TSCNI_EXEC_SLOTS is neither a number nor off: two per CPU']);
});

test("parseSize: bytes, K, M, G", () => {
  assert.deepEqual(["1024", "4K", "256M", "1g", " 2G ", "0", "-1", "1T", "12.5M", ""].map(parseSize), [
    1024,
    4096,
    256 << 20,
    1 << 30,
    2 * 1024 ** 3,
    undefined,
    undefined,
    undefined,
    undefined,
    undefined,
  ]);
});
