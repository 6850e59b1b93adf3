import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { runCnitool } from "./cnitool.js";
import { onlyPattern, readPluginConfig } from "./conformance.js";

describe("the config file", () => {
  test("one plugin's config, as it is", () => {
    assert.deepEqual(readPluginConfig('{"cniVersion":"1.1.0","name":"n","type":"bridge","bridge":"b0"}', "bridge", "f"), {
      cniVersion: "1.1.0",
      name: "n",
      type: "bridge",
      bridge: "b0",
    });
  });

  test("a conflist: the plugin of the executable's type (or the only one), with the list's name and cniVersion", () => {
    const list = '{"cniVersion":"1.0.0","name":"net","plugins":[{"type":"bridge","bridge":"b0"},{"type":"portmap"}]}';
    assert.deepEqual(readPluginConfig(list, "portmap", "f"), { type: "portmap", name: "net", cniVersion: "1.0.0" });
    assert.deepEqual(readPluginConfig('{"cniVersion":"1.0.0","name":"net","plugins":[{"type":"x"}]}', "y", "f"), {
      type: "x",
      name: "net",
      cniVersion: "1.0.0",
    });
    assert.throws(() => readPluginConfig(list, "tuning", "f.conflist"), /^Error: f\.conflist: a conflist without a plugin of type "tuning"$/);
    // A 1.1.0 list may give only cniVersions: the newest this implementation knows, as libcni picks it.
    assert.deepEqual(readPluginConfig('{"cniVersions":["0.4.0","1.1.0"],"name":"net","plugins":[{"type":"x"}]}', "x", "f"), {
      type: "x",
      name: "net",
      cniVersion: "1.1.0",
    });
  });

  test("what cannot be used says why, naming the file", () => {
    assert.throws(() => readPluginConfig("{", "bridge", "f.json"), /^Error: f\.json: not JSON: unexpected end of JSON input$/);
    assert.throws(() => readPluginConfig('{"name":"n","type":"bridge"}', "bridge", "f.json"), /^Error: f\.json: the config needs "cniVersion"/);
  });
});

describe("the command line", () => {
  const run = async (argv: string[]) => {
    let stderr = "";
    const code = await runCnitool(argv, {
      env: {},
      cwd: "/",
      stdout: () => undefined,
      stderr: (s) => {
        stderr += s;
      },
    });
    return { code, stderr };
  };

  test("--config is required; --format is tap or junit; --only a regular expression", async () => {
    assert.deepEqual(await run(["conformance", "/bin/true"]), { code: 1, stderr: "error: required option '--config <file>' not specified\n" });
    assert.deepEqual(await run(["conformance", "/bin/true", "--config", "x", "--format", "xml"]), {
      code: 1,
      stderr: 'Error: --format must be tap or junit, not "xml"\n',
    });
    const badOnly = await run(["conformance", "/bin/true", "--config", "x", "--only", "("]);
    assert.equal(badOnly.code, 1);
    assert.match(badOnly.stderr, /^Error: --only: .*\n$/);
  });

  test("a --config that is not there is named, not a raw ENOENT", async () => {
    assert.deepEqual(await run(["conformance", "/bin/true", "--config", "missing.json"]), {
      code: 1,
      stderr: "Error: --config missing.json: no such file (/missing.json)\n",
    });
    assert.deepEqual(await run(["conformance", "/bin/true", "--config", "/"]), { code: 1, stderr: "Error: --config /: a directory, not a file\n" });
  });

  test("--only is smart-case: a capital letter makes it case-sensitive", () => {
    const titles = ["VERSION: the answer's cniVersion is the one on stdin [version]", "ADD (cniVersion 1.1.0): a valid result [add]"];
    assert.deepEqual(
      titles.filter((t) => onlyPattern("VERSION")!.test(t)),
      [titles[0]],
    );
    assert.deepEqual(
      titles.filter((t) => onlyPattern("version")!.test(t)),
      titles,
    );
    assert.equal(onlyPattern(undefined), undefined);
  });
});
