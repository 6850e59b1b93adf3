import assert from "node:assert/strict";
import { describe, test } from "node:test";
import {
  type AttachmentRecord,
  hostsLine,
  hostsLines,
  hostsText,
  isAttachment,
  lineAddress,
  linesName,
  ownsLine,
  parseRecords,
  recordsText,
} from "./hosts.js";

describe("dnsname hosts file", () => {
  test("lines as Go writes them: address, name, aliases, tab-separated; one per address", () => {
    assert.equal(hostsLine("10.89.0.2", "web", ["db", "cache"]), "10.89.0.2\tweb\tdb\tcache");
    assert.equal(hostsLine("fd00::2", "web", []), "fd00::2\tweb");
    assert.equal(hostsText(["a", "b"]), "a\nb\n");
    assert.equal(hostsText([]), "");
    assert.deepEqual(hostsLines("10.0.0.2\tweb\n\n  \n10.0.0.3\tdb\n"), ["10.0.0.2\tweb", "10.0.0.3\tdb"]);
  });

  test("a line's address is read canonically; a line that does not start with one has none", () => {
    assert.equal(lineAddress("fd00:0::0002\tweb"), "fd00::2");
    assert.equal(lineAddress("10.0.0.2 web"), "10.0.0.2");
    assert.equal(lineAddress("# comment"), undefined);
  });

  test("an attachment's lines: its addresses with its name; by name alone when no address is known (Go's DEL)", () => {
    const lines = ["10.0.0.2\tweb\tdb", "fd00::2\tweb\tdb", "10.0.0.3\tweb", "10.0.0.4\tother", "10.0.0.5\t\tonly-alias"];
    const mine = (owner: Parameters<typeof ownsLine>[0]) => lines.filter((l) => ownsLine(owner, l));
    assert.deepEqual(
      mine({ addresses: ["10.0.0.2", "fd00::2"], name: "web" }),
      lines.slice(0, 2),
      "another container of the same name keeps its line",
    );
    assert.deepEqual(mine({ addresses: ["10.0.0.4"], name: "web" }), [], "an address now named otherwise is not this attachment's");
    assert.deepEqual(mine({ addresses: ["10.0.0.4"] }), ["10.0.0.4\tother"], "without a name, an address's line");
    assert.deepEqual(mine({ addresses: [], name: "web" }), lines.slice(0, 3));
    assert.deepEqual(mine({ addresses: [] }), []);
    assert.deepEqual(
      mine({ addresses: [], name: "only-alias" }),
      ["10.0.0.5\t\tonly-alias"],
      "Go's nameless line: its first name field counts, as strings.Fields does",
    );
  });

  test("CHECK's question: does an address have the name and every alias", () => {
    const lines = ["10.0.0.2\tweb\tdb\tcache"];
    assert.ok(linesName(lines, "10.0.0.2", "web", ["cache", "db"]));
    assert.ok(linesName(lines, "10.0.0.2", "web", []));
    assert.ok(!linesName(lines, "10.0.0.2", "web", ["other"]));
    assert.ok(!linesName(lines, "10.0.0.2", "db", []));
    assert.ok(!linesName(lines, "10.0.0.3", "web", []));
  });
});

describe("dnsname attachment records", () => {
  const r: AttachmentRecord = { containerID: "c1", ifName: "eth0", name: "web", aliases: ["db"], addresses: ["10.0.0.2", "fd00::2"] };

  test("round trip, and the attachment is found by container ID and interface", () => {
    assert.deepEqual(parseRecords(recordsText([r])), [r]);
    assert.ok(isAttachment(r, "c1", "eth0"));
    assert.ok(!isAttachment(r, "c1", "eth1"));
    assert.ok(recordsText([r]).endsWith("}\n"));
  });

  test("a torn or foreign file counts as no records; entries of the wrong shape are dropped", () => {
    for (const text of ["", "{", "null", "[]", '{"attachments":5}', '{"attachments":[1,null]}']) assert.deepEqual(parseRecords(text), [], text);
    assert.deepEqual(parseRecords(JSON.stringify({ attachments: [r, { ...r, addresses: [1] }, { ...r, name: undefined }] })), [r]);
  });
});
