/**
 * What `cnitool pod up` asks of the pod manager: each network's runtime config (port mappings, and `aliases`
 * keyed by the network's name, the capability's shape), and the flags that are refused before anything runs.
 */

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { parseAlias, podRuntimeConfig } from "./pod.js";

describe("podRuntimeConfig", () => {
  const port = { hostPort: 8080, containerPort: 80, protocol: "tcp" };

  test("nothing to pass: no runtime config", () => {
    assert.equal(podRuntimeConfig(["a"], {}), undefined);
    assert.equal(podRuntimeConfig(["a"], { portMappings: [], aliases: [] }), undefined);
  });

  test("aliases are keyed by each network's own name", () => {
    assert.deepEqual(podRuntimeConfig(["a", "b"], { aliases: ["db", "cache"] }), {
      a: { aliases: { a: ["db", "cache"] } },
      b: { aliases: { b: ["db", "cache"] } },
    });
  });

  test("beside port mappings", () => {
    assert.deepEqual(podRuntimeConfig(["a"], { portMappings: [port], aliases: ["db"] }), { a: { portMappings: [port], aliases: { a: ["db"] } } });
    assert.deepEqual(podRuntimeConfig(["a"], { portMappings: [port] }), { a: { portMappings: [port] } });
  });
});

describe("parseAlias", () => {
  test("a name is kept as given; an empty one is refused", () => {
    assert.equal(parseAlias("db"), "db");
    assert.throws(() => parseAlias(""), { message: `invalid --alias "": want a name` });
    assert.throws(() => parseAlias("  "), { message: `invalid --alias "  ": want a name` });
  });
});
