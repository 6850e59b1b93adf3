import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { canonicalIP } from "#ip/ip.js";
import { formatCniArgs, loadCniArgs, parseArgBool, parseCniArgs } from "./args.js";

describe("parseArgBool (Go UnmarshallableBool)", () => {
  for (const v of ["True", "true", "1", "TRUE", "tRuE"]) test(`${v} => true`, () => assert.equal(parseArgBool(v), true));
  for (const v of ["False", "false", "0", "FALSE"]) test(`${v} => false`, () => assert.equal(parseArgBool(v), false));
  test("anything else fails with the lower-cased input", () => {
    assert.throws(() => parseArgBool("invalid"), { message: "boolean unmarshal error: invalid input invalid" });
    assert.throws(() => parseArgBool("YES"), { message: "boolean unmarshal error: invalid input yes" });
    assert.throws(() => parseArgBool(""), { message: "boolean unmarshal error: invalid input " });
    assert.throws(() => parseArgBool("2"), { message: "boolean unmarshal error: invalid input 2" });
  });
});

describe("parseCniArgs / formatCniArgs", () => {
  test("splits K=V pairs on ;", () => {
    assert.deepEqual(parseCniArgs(""), []);
    assert.deepEqual(parseCniArgs("a=b;C=d"), [
      ["a", "b"],
      ["C", "d"],
    ]);
    assert.deepEqual(parseCniArgs("k="), [["k", ""]]);
    assert.deepEqual(parseCniArgs("=v"), [["", "v"]]);
  });
  test("a pair must split into exactly two parts", () => {
    assert.throws(() => parseCniArgs("IgnoreUnknown=0, Unk=nown"), { message: 'ARGS: invalid pair "IgnoreUnknown=0, Unk=nown"' });
    assert.throws(() => parseCniArgs("novalue"), { message: 'ARGS: invalid pair "novalue"' });
    assert.throws(() => parseCniArgs("a=b;"), { message: 'ARGS: invalid pair ""' });
    assert.throws(() => parseCniArgs("a=b=c"), { message: 'ARGS: invalid pair "a=b=c"' });
    assert.throws(() => parseCniArgs('q"=1=2'), { message: 'ARGS: invalid pair "q\\"=1=2"' });
  });
  test("formatCniArgs is the inverse", () => {
    assert.equal(
      formatCniArgs([
        ["IP", "10.0.0.2"],
        ["K8S_POD_NAME", "p"],
      ]),
      "IP=10.0.0.2;K8S_POD_NAME=p",
    );
    assert.equal(formatCniArgs([]), "");
    const s = "a=1;b=;c=x";
    assert.equal(formatCniArgs(parseCniArgs(s)), s);
  });
});

describe("loadCniArgs (Go types.LoadArgs)", () => {
  const str = (v: string): string => v;
  const parsers = { IP: canonicalIP, K8S_POD_NAME: str, Flag: parseArgBool };

  test("empty args with no parsers", () => {
    assert.deepEqual(loadCniArgs("", {}), {});
  });
  test("IgnoreUnknown=True lets unknown keys through", () => {
    assert.deepEqual(loadCniArgs("IgnoreUnknown=True;Unk=nown", {}), { IgnoreUnknown: true });
  });
  test("IgnoreUnknown is decided after all pairs (order does not matter)", () => {
    assert.deepEqual(loadCniArgs("Unk=nown;IgnoreUnknown=1", {}), { IgnoreUnknown: true });
  });
  test("unknown keys fail", () => {
    assert.throws(() => loadCniArgs("Unk=nown", {}), { message: 'ARGS: unknown args ["Unk=nown"]' });
    assert.throws(() => loadCniArgs("a=1;IP=1.2.3.4;b=2", parsers), { message: 'ARGS: unknown args ["a=1" "b=2"]' });
    assert.throws(() => loadCniArgs("IgnoreUnknown=false;Unk=nown", {}), { message: 'ARGS: unknown args ["Unk=nown"]' });
    assert.throws(() => loadCniArgs("IgnoreUnknown=1;IgnoreUnknown=0;Unk=nown", {}), /unknown args/);
  });
  test("a malformed pair fails before anything else", () => {
    assert.throws(() => loadCniArgs("IgnoreUnknown=0, Unk=nown", {}), { message: 'ARGS: invalid pair "IgnoreUnknown=0, Unk=nown"' });
  });
  test("IgnoreUnknown=1 alone", () => {
    assert.deepEqual(loadCniArgs("IgnoreUnknown=1", {}), { IgnoreUnknown: true });
  });
  test("a bad IgnoreUnknown value fails with the pair", () => {
    assert.throws(() => loadCniArgs("IgnoreUnknown=maybe", {}), {
      message: 'ARGS: error parsing value of pair "IgnoreUnknown=maybe": boolean unmarshal error: invalid input maybe',
    });
  });
  test("values go through their parser", () => {
    assert.deepEqual(loadCniArgs("IP=10.0.0.0;K8S_POD_NAME=pod-1;Flag=True", parsers), {
      IP: "10.0.0.0",
      K8S_POD_NAME: "pod-1",
      Flag: true,
    });
    assert.deepEqual(loadCniArgs("K8S_POD_NAME=", parsers), { K8S_POD_NAME: "" });
    assert.deepEqual(loadCniArgs("K8S_POD_NAME=notempty", parsers), { K8S_POD_NAME: "notempty" });
  });
  test("a parser error fails with the pair (IP=10.0.0.0/24 into an IP)", () => {
    assert.throws(() => loadCniArgs("IP=10.0.0.0/24", parsers), {
      message: 'ARGS: error parsing value of pair "IP=10.0.0.0/24": invalid IP address: 10.0.0.0/24',
    });
  });
  test("keys are case-sensitive", () => {
    assert.throws(() => loadCniArgs("ip=10.0.0.1", parsers), { message: 'ARGS: unknown args ["ip=10.0.0.1"]' });
  });
  test("inherited object properties are not keys", () => {
    assert.throws(() => loadCniArgs("toString=x;constructor=y", {}), { message: 'ARGS: unknown args ["toString=x" "constructor=y"]' });
  });
  test("the last value of a repeated key wins", () => {
    assert.deepEqual(loadCniArgs("K8S_POD_NAME=a;K8S_POD_NAME=b", parsers), { K8S_POD_NAME: "b" });
  });
});
