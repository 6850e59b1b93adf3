import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { validateNetworkName } from "#spec/validate.js";
import {
  excerpt,
  judgeErrorDocument,
  judgeSuccessDocument,
  judgeSuccessStatus,
  judgeSupportedVersions,
  judgeVersionAnswer,
  type PluginCall,
  SECTION,
  splitDocuments,
} from "./output.js";
import { BAD_NAMES } from "./refusals.js";
import { configProblem } from "./suite.js";

const call = (over: Partial<PluginCall>): PluginCall => ({
  command: "ADD",
  env: {},
  stdin: "{}",
  exitCode: 0,
  signal: null,
  stdout: "",
  stderr: "",
  durationMs: 1,
  ...over,
});
const messages = (problems: Array<{ message: string }>) => problems.map((p) => p.message);

describe("splitDocuments", () => {
  test("documents in order, white space around and between them allowed", () => {
    assert.deepEqual(splitDocuments(""), { documents: [] });
    assert.deepEqual(splitDocuments(" \n"), { documents: [] });
    assert.deepEqual(splitDocuments('{"a":1}\n'), { documents: [{ a: 1 }] });
    assert.deepEqual(splitDocuments('{"a":1}\n{"a":2}'), { documents: [{ a: 1 }, { a: 2 }] });
    assert.deepEqual(splitDocuments("1 2"), { documents: [1, 2] });
  });

  test("text that is not JSON stops the reading, with Go's words", () => {
    assert.deepEqual(splitDocuments("{"), { documents: [], malformed: "unexpected end of JSON input" });
    assert.deepEqual(splitDocuments('{"a":1} oops'), { documents: [{ a: 1 }], malformed: "invalid character 'o' looking for beginning of value" });
  });

  test("excerpt collapses white space and cuts long text", () => {
    assert.equal(excerpt('{\n    "code": 7\n}'), '{ "code": 7 }');
    assert.equal(excerpt("x".repeat(200), 10), "xxxxxxxxxx...");
  });
});

describe("a success", () => {
  test("exit 0 and one JSON object", () => {
    assert.deepEqual(judgeSuccessDocument(call({ stdout: '{"cniVersion":"1.1.0"}' }), SECTION.addSuccess), {
      problems: [],
      document: { cniVersion: "1.1.0" },
    });
  });

  test("two documents, nothing, not an object, not JSON", () => {
    const judge = (stdout: string) => messages(judgeSuccessDocument(call({ stdout }), SECTION.addSuccess).problems);
    assert.deepEqual(judge("{}\n{}\n"), ["stdout holds 2 JSON documents; the result must be exactly one document and nothing else"]);
    assert.deepEqual(judge(""), ["ADD succeeded but printed nothing on stdout; a result is required"]);
    assert.deepEqual(judge("[1]"), ["the document on stdout is not a JSON object: [1]"]);
    assert.deepEqual(judge("ok"), ["stdout is not JSON (invalid character 'o' looking for beginning of value): \"ok\""]);
  });

  test("a failure where a success is due says how it failed: its error, or its output", () => {
    const err = call({ exitCode: 1, stdout: '{"code":7,"msg":"bad","details":"key x"}' });
    assert.deepEqual(messages(judgeSuccessDocument(err, SECTION.addSuccess).problems), ["ADD failed (it exited with status 1): error 7: bad; key x"]);
    assert.deepEqual(messages(judgeSuccessStatus(call({ command: "DEL", exitCode: null, signal: "SIGKILL", stderr: "boom\n" }), SECTION.del)), [
      'DEL failed (it was killed by SIGKILL): stdout "" (stderr has 1 line, starting "boom")',
    ]);
    assert.deepEqual(judgeSuccessStatus(call({ command: "DEL", stdout: "anything" }), SECTION.del), []);
  });
});

describe("a failure", () => {
  const failing = (stdout: string, over: Partial<PluginCall> = {}) => call({ exitCode: 1, stdout, ...over });

  test("one error document with a well-known code and a message passes, also a plugin's own code", () => {
    for (const code of [1, 4, 7, 11, 51, 100, 999]) {
      assert.deepEqual(judgeErrorDocument(failing(JSON.stringify({ code, msg: "m" }))).problems, [], String(code));
    }
    assert.deepEqual(judgeErrorDocument(failing('{"code":4,"msg":"m","cniVersion":"1.1.0"}')).error, {
      code: 4,
      msg: "m",
      details: undefined,
      cniVersion: "1.1.0",
    });
  });

  test("exit 0 where a refusal is due", () => {
    assert.deepEqual(judgeErrorDocument(call({ stdout: "{}" })).problems, [
      { rule: SECTION.errors, message: 'ADD succeeded (exit 0) where it must fail; stdout "{}"' },
    ]);
  });

  test("a stack trace on stderr and nothing on stdout names the rule and shows the trace's first line", () => {
    const { problems } = judgeErrorDocument(failing("", { stderr: "Error: boom\n    at main (x.js:1:1)\n" }));
    assert.deepEqual(problems, [
      {
        rule: SECTION.error,
        message: 'a failing plugin prints its error as one JSON document on stdout; stdout is empty (stderr has 2 lines, starting "Error: boom")',
      },
    ]);
  });

  test("two documents; a reserved code; no message; details not text", () => {
    assert.deepEqual(messages(judgeErrorDocument(failing('{"code":7,"msg":"a"}{"code":7,"msg":"b"}')).problems), [
      "stdout must hold the error document and nothing else; it holds 2 document(s)",
    ]);
    assert.match(
      messages(judgeErrorDocument(failing('{"code":12,"msg":"a"}')).problems)[0]!,
      /^code 12 is reserved: codes 0-99 are the spec's well-known ones \(1, 2, 3, 4, 5, 6, 7, 11, 50, 51\)/,
    );
    assert.deepEqual(messages(judgeErrorDocument(failing('{"code":0,"msg":""}')).problems).length, 2);
    assert.deepEqual(messages(judgeErrorDocument(failing('{"code":"7","msg":"a","details":3}')).problems), [
      'the error document needs an integer "code"; got "7"',
      '"details" must be a string; got 3',
    ]);
  });

  test("the code and the names a rule requires", () => {
    const r = judgeErrorDocument(failing('{"code":7,"msg":"required env variables missing"}'), {
      code: 4,
      codeRule: SECTION.error,
      names: ["CNI_NETNS"],
      namesRule: SECTION.parameters,
    });
    assert.deepEqual(r.problems, [
      { rule: SECTION.error, message: "expected error code 4 (invalid necessary environment variables), got 7: required env variables missing" },
      { rule: SECTION.parameters, message: 'the error message must name CNI_NETNS; it says "required env variables missing"' },
    ]);
    assert.deepEqual(
      judgeErrorDocument(failing('{"code":4,"msg":"required env variables","details":"[CNI_NETNS] missing"}'), { code: 4, names: ["CNI_NETNS"] })
        .problems,
      [],
    );
  });
});

describe("VERSION", () => {
  test("a good answer: its claimed spec versions", () => {
    const a = judgeVersionAnswer(call({ command: "VERSION", stdout: '{"cniVersion":"1.1.0","supportedVersions":["0.4.0","1.0.0"]}\n' }));
    assert.deepEqual(a, { problems: [], cniVersion: "1.1.0", listed: ["0.4.0", "1.0.0"], supported: ["0.4.0", "1.0.0"] });
    assert.deepEqual(judgeSupportedVersions(a.listed!), []);
  });

  test("no cniVersion; no list; versions that are not the spec's, listed twice", () => {
    const a = judgeVersionAnswer(call({ command: "VERSION", stdout: '{"supportedVersions":["0.4.0","1.0","1.0.0","1.0.0"]}' }));
    assert.deepEqual(messages(a.problems), ['the answer needs "cniVersion" (a version string); got null']);
    assert.deepEqual(a.supported, ["0.4.0", "1.0.0"]);
    assert.deepEqual(messages(judgeSupportedVersions(a.listed!)), [
      'supportedVersions must list CNI spec versions; "1.0" is not one (the spec\'s versions: 0.1.0, 0.2.0, 0.3.0, 0.3.1, 0.4.0, 1.0.0, 1.1.0)',
      'supportedVersions lists "1.0.0" more than once',
    ]);
    const none = judgeVersionAnswer(call({ command: "VERSION", stdout: '{"cniVersion":"0.2.0","supportedVersions":[]}' }));
    assert.deepEqual(messages(none.problems), ['the answer needs "supportedVersions", a non-empty list of version strings; got []']);
    assert.deepEqual(none.supported, []);
  });
});

describe("the configs the runner breaks and accepts", () => {
  test("the bad names break the spec's name rule (as its validator reads it)", () => {
    for (const name of BAD_NAMES) assert.throws(() => validateNetworkName(name), name);
  });

  test("a usable config: an object with cniVersion (a version), name and type", () => {
    assert.equal(configProblem({ cniVersion: "1.1.0", name: "n", type: "bridge" }), undefined);
    assert.equal(configProblem([]), "the config must be a JSON object (one plugin's configuration)");
    assert.equal(configProblem({ name: "n", type: "t" }), 'the config needs "cniVersion" (a version string)');
    assert.match(configProblem({ cniVersion: "one", name: "n", type: "t" })!, /^the config's cniVersion: failed to convert major version part "one"/);
    assert.equal(configProblem({ cniVersion: "1.0.0", type: "t" }), 'the config needs "name"');
    assert.equal(configProblem({ cniVersion: "1.0.0", name: "n" }), 'the config needs "type"');
  });
});
