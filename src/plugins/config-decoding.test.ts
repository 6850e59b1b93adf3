/**
 * Every plugin in the registry reads its config through the Go decoding layer (go-json/go-decode.ts): its
 * PluginDefinition names the schema its Go counterpart decodes, and a config whose struct keys are respelled —
 * as Go field names (what containerd's go-cni sends: `HostPort`, `IngressRate`), all upper case, all lower case —
 * parses to exactly the config the original spelling gives, as the Go plugin reads them alike. The samples must
 * use every field of the schema, so a key added to a schema is tested the day it is added; a plugin added to the
 * registry without a schema or samples fails here.
 */

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { foldKey, type GoType } from "#go-json/go-decode.js";
import { isJsonObject, type JsonValue } from "#go-json/json.js";
import type { PluginDefinition } from "#skel/skel.js";
import { COMMON, SAMPLES } from "#testing/plugin-samples.js";
import { PLUGINS } from "./registry.js";

const STYLES: Record<string, (key: string) => string> = {
  "Go field names": (k) => k.charAt(0).toUpperCase() + k.slice(1),
  "upper case": (k) => k.toUpperCase(),
  "lower case": (k) => k.toLowerCase(),
};

/** The schema field a key sets: exact name, else Go's fold (as the decoder matches it). */
function fieldOf(type: GoType<unknown>, key: string): string | undefined {
  const fields = type.fields ?? {};
  if (key in fields) return key;
  return Object.keys(fields).find((f) => foldKey(f) === foldKey(key));
}

/** The value with every struct key respelled by `style` (map keys and unknown keys stay); records the fields used. */
function respell(value: JsonValue, type: GoType<unknown>, style: (key: string) => string, path: string, used: Set<string>): JsonValue {
  if (type.kind === "list" && Array.isArray(value)) return value.map((v) => respell(v, type.elem!, style, `${path}[]`, used));
  if (type.kind === "map" && isJsonObject(value)) {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, respell(v, type.elem!, style, `${path}{}`, used)]));
  }
  if (type.kind !== "struct" || !isJsonObject(value)) return value;
  const out: Record<string, JsonValue> = {};
  for (const [key, v] of Object.entries(value)) {
    const field = fieldOf(type, key);
    if (field === undefined) {
      out[key] = v;
      continue;
    }
    used.add(`${path}${field}`);
    out[style(key)] = respell(v, type.fields![field]!, style, `${path}${field}.`, used);
  }
  return out;
}

/** Every field path of a schema, as respell records them. */
function fieldPaths(type: GoType<unknown>, path = "", out = new Set<string>(), depth = 0): Set<string> {
  if (depth > 8) return out;
  if (type.kind === "list") return fieldPaths(type.elem!, `${path}[]`, out, depth + 1);
  if (type.kind === "map") return fieldPaths(type.elem!, `${path}{}`, out, depth + 1);
  for (const [name, t] of Object.entries(type.fields ?? {})) {
    out.add(`${path}${name}`);
    fieldPaths(t, `${path}${name}.`, out, depth + 1);
  }
  return out;
}

/** A comparable form of a parsed config: object keys lower-cased (raw parts keep the input's spelling), Maps as entries. */
function comparable(v: unknown): unknown {
  if (v instanceof Map) return [...v].map(([k, x]) => [k, comparable(x)]);
  if (v instanceof Uint8Array) return [...v];
  if (Array.isArray(v)) return v.map(comparable);
  if (v !== null && typeof v === "object") {
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v)) out[k.toLowerCase()] = comparable(x);
    return Object.fromEntries(Object.entries(out).sort(([a], [b]) => a.localeCompare(b)));
  }
  return v;
}

const parseWith = (plugin: PluginDefinition, config: unknown, cniArgs = "") => plugin.config!.parse(Buffer.from(JSON.stringify(config)), cniArgs);

describe("every plugin decodes its config as Go does", () => {
  for (const [name, entry] of Object.entries(PLUGINS)) {
    test(name, async () => {
      const plugin = await entry.load();
      assert.ok(plugin?.config, `${name}: the PluginDefinition names its config schema and parser (config: { schema, parse })`);
      const samples = SAMPLES[name];
      assert.ok(samples?.length, `${name}: testing/plugin-samples.ts has sample configs for it`);
      const used = new Set<string>();
      for (const sample of samples) {
        const expected = comparable(parseWith(plugin, sample.config, sample.cniArgs));
        for (const [styleName, style] of Object.entries(STYLES)) {
          const respelled = respell(sample.config, plugin.config.schema, style, "", used);
          assert.deepEqual(
            comparable(parseWith(plugin, respelled, sample.cniArgs)),
            expected,
            `${name}, keys in ${styleName}: ${JSON.stringify(respelled)}`,
          );
        }
      }
      const missing = [...fieldPaths(plugin.config.schema)].filter((p) => !used.has(p));
      assert.deepEqual(missing, [], `${name}: the samples leave these schema fields untested`);
    });
  }
});

describe("what containerd sends", () => {
  const load = (name: string) => PLUGINS[name]!.load();
  test("portmap reads go-cni's PortMapping{HostPort, ContainerPort, Protocol, HostIP}", async () => {
    const conf = parseWith(await load("portmap"), {
      ...COMMON,
      type: "portmap",
      runtimeConfig: { portMappings: [{ HostPort: 18080, ContainerPort: 80, Protocol: "tcp", HostIP: "" }] },
    }) as { mappings: unknown };
    assert.deepEqual(conf.mappings, [{ hostPort: 18080, containerPort: 80, protocol: "tcp" }]);
  });
  test("bandwidth reads go-cni's BandWidth{IngressRate, IngressBurst, EgressRate, EgressBurst}", async () => {
    const conf = parseWith(await load("bandwidth"), {
      ...COMMON,
      type: "bandwidth",
      runtimeConfig: { bandwidth: { IngressRate: 1000000, IngressBurst: 2147483647, EgressRate: 2000000, EgressBurst: 2147483647 } },
    }) as { limits: unknown };
    assert.deepEqual(conf.limits, { ingressRate: 1000000, ingressBurst: 2147483647, egressRate: 2000000, egressBurst: 2147483647 });
  });
  test("host-local reads go-cni's IPRanges{Subnet, RangeStart, RangeEnd, Gateway}", async () => {
    const conf = parseWith(await load("host-local"), {
      ...COMMON,
      type: "bridge",
      ipam: { type: "host-local" },
      runtimeConfig: { ipRanges: [[{ Subnet: "10.88.0.0/16", RangeStart: "10.88.1.1", RangeEnd: "10.88.1.9", Gateway: "10.88.0.1" }]] },
    }) as { rangeSets: Array<{ ranges: Array<{ rangeStart: { text: string }; rangeEnd: { text: string }; gateway: { text: string } }> }> };
    const r = conf.rangeSets[0]!.ranges[0]!;
    assert.deepEqual([r.rangeStart.text, r.rangeEnd.text, r.gateway.text], ["10.88.1.1", "10.88.1.9", "10.88.0.1"]);
  });
  test("a bad value under a Go spelling is named as written", async () => {
    const portmap = await load("portmap");
    assert.throws(
      () =>
        parseWith(portmap, {
          ...COMMON,
          type: "portmap",
          runtimeConfig: { portMappings: [{ HostPort: "80", ContainerPort: 80, Protocol: "tcp" }] },
        }),
      { code: 7, msg: 'invalid "runtimeConfig.portMappings[0].HostPort": "80" (want an integer)' },
    );
  });
});
