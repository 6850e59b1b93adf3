import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { type CheckResult, formatJUnit, runPassed, tally, tapEntry, tapFooter, tapHeader, yamlBlock } from "./report.js";

const result = (over: Partial<CheckResult>): CheckResult => ({
  id: 1,
  title: "ADD: one document",
  section: "SPEC §Result types / ADD Success",
  outcome: "pass",
  problems: [],
  durationMs: 12,
  ...over,
});

describe("TAP", () => {
  test("a passing check is one line naming its section", () => {
    assert.equal(tapEntry(result({})), "ok 1 - ADD: one document [SPEC §Result types / ADD Success]\n");
  });

  test("a skip carries its reason; # in a title is escaped so it is no directive", () => {
    assert.equal(
      tapEntry(result({ id: 3, title: "GC #1", outcome: "skip", skipReason: "no 1.1.0" })),
      "ok 3 - GC \\#1 [SPEC §Result types / ADD Success] # SKIP no 1.1.0\n",
    );
  });

  test("a failure has a YAML block: the rule and message first, then the evidence (text as a literal block)", () => {
    const text = tapEntry(
      result({
        id: 2,
        outcome: "fail",
        problems: [
          { rule: "SPEC §Result types / Error", message: "stdout is empty" },
          { rule: "RUNNER: x", message: "left eth0" },
        ],
        diagnostics: { exit: 1, stdout: "", stderr: "Error: boom\n    at main (x.js:1:1)\n" },
      }),
    );
    assert.equal(
      text,
      [
        "not ok 2 - ADD: one document [SPEC §Result types / ADD Success]",
        "  ---",
        "  message: stdout is empty",
        "  rule: SPEC §Result types / Error",
        "  more:",
        '    - rule: "RUNNER: x"',
        "      message: left eth0",
        "  exit: 1",
        '  stdout: ""',
        "  stderr: |+",
        "    Error: boom",
        "        at main (x.js:1:1)",
        "  ...",
        "",
      ].join("\n"),
    );
  });

  test("a tolerated deviation is a TODO: reported, never failing the run", () => {
    const r = result({ outcome: "tolerated", problems: [{ rule: "SPEC §Result types / Error", message: "no cniVersion" }] });
    assert.match(
      tapEntry(r),
      /^not ok 1 - ADD: one document \[SPEC §Result types \/ ADD Success\] # TODO tolerated deviation: no cniVersion\n {2}---\n/,
    );
    assert.equal(runPassed([r, result({ outcome: "skip" })]), true);
    assert.equal(runPassed([r, result({ outcome: "fail" })]), false);
  });

  test("header and footer: the version, comments, the plan at the end and the counts", () => {
    assert.equal(tapHeader(["plugin x", "two\nlines"]), "TAP version 13\n# plugin x\n# two lines\n");
    const all = [result({}), result({ id: 2, outcome: "fail" }), result({ id: 3, outcome: "skip" }), result({ id: 4, outcome: "tolerated" })];
    assert.deepEqual(tally(all), { pass: 1, fail: 1, skip: 1, tolerated: 1 });
    assert.equal(tapFooter(all), "1..4\n# pass 1, fail 1, skip 1, tolerated deviations 1\n");
  });
});

describe("YAML diagnostics", () => {
  test("scalars that YAML would read otherwise are quoted; lists and records nest", () => {
    assert.equal(
      yamlBlock({ a: "true", b: "12", c: "x: y", d: "plain words", e: null, f: [], g: ["one", { k: "v", n: 2 }], h: {} }),
      [
        "  ---",
        '  a: "true"',
        '  b: "12"',
        '  c: "x: y"',
        "  d: plain words",
        "  e: ~",
        "  f: []",
        "  g:",
        "    - one",
        "    - k: v",
        "      n: 2",
        "  h: {}",
        "  ...",
        "",
      ].join("\n"),
    );
  });

  test("text without a final newline is a strip block; a leading space gets an indentation indicator", () => {
    assert.equal(yamlBlock({ s: "a\nb" }), "  ---\n  s: |-\n    a\n    b\n  ...\n");
    assert.equal(yamlBlock({ s: " a\nb" }), "  ---\n  s: |2-\n     a\n    b\n  ...\n");
  });
});

describe("JUnit", () => {
  test("one testsuite with the counts; failures typed by their rule; skips; tolerated deviations pass with a note", () => {
    const xml = formatJUnit({ name: "bridge", timestamp: new Date("2030-01-02T03:04:05.678Z"), properties: { plugin: "/opt/cni/bin/bridge" } }, [
      result({}),
      result({
        id: 2,
        title: 'ADD <a> & "b"',
        outcome: "fail",
        problems: [{ rule: "SPEC §Result types / Error", message: "stdout is empty" }],
        durationMs: 1500,
      }),
      result({ id: 3, outcome: "skip", skipReason: "kernel" }),
      result({ id: 4, outcome: "tolerated", problems: [{ rule: "SPEC §Result types / Error", message: "no cniVersion" }] }),
    ]);
    assert.match(
      xml,
      /^<\?xml version="1.0" encoding="UTF-8"\?>\n<testsuites name="cnitool conformance" tests="4" failures="1" errors="0" skipped="1" time="1.536">\n/,
    );
    assert.match(xml, /<testsuite name="bridge" tests="4" failures="1" errors="0" skipped="1" time="1.536" timestamp="2030-01-02T03:04:05">/);
    assert.match(xml, /<property name="plugin" value="\/opt\/cni\/bin\/bridge"\/>/);
    assert.match(xml, /<testcase classname="SPEC §Result types \/ ADD Success" name="ADD: one document" time="0.012"\/>/);
    assert.match(
      xml,
      /name="ADD &lt;a&gt; &amp; &quot;b&quot;" time="1.500">\n {6}<failure message="stdout is empty" type="SPEC §Result types \/ Error">---\nmessage: stdout is empty\n/,
    );
    assert.match(xml, /<skipped message="kernel"\/>/);
    assert.match(xml, /<system-out>tolerated deviation \(does not fail the run\)\n---\nmessage: no cniVersion/);
    assert.match(xml, /<\/testsuite>\n<\/testsuites>\n$/);
    // Every element opened is closed.
    for (const tag of ["testsuites", "testsuite", "properties", "failure", "system-out"]) {
      assert.equal((xml.match(new RegExp(`<${tag}[ >]`, "g")) ?? []).length, (xml.match(new RegExp(`</${tag}>`, "g")) ?? []).length, tag);
    }
  });

  test("characters XML cannot hold are replaced", () => {
    const xml = formatJUnit({ name: "p", timestamp: new Date(0), properties: {} }, [result({ title: "a\u0001b" })]);
    assert.match(xml, /name="a\ufffdb"/);
  });
});
