/**
 * The vrf plugin's configuration: `vrfname` (required, a link name) and `table` (the VRF's routing table;
 * 0 or absent picks the first id no other VRF of the namespace uses). Errors name the key and value (code 7).
 * @module
 */

import { refine, string, struct, uint32, withDefault } from "#go-json/go-decode.js";
import { loadPluginConf, parsePrevResult } from "#skel/conf.js";
import { NET_CONF_FIELDS, type PluginConf } from "#spec/config.js";
import { invalidKey } from "#spec/errors.js";
import { type Result100, toCurrentResult } from "#spec/result/index.js";
import { decodeSettings, type Settings } from "../../common/keys.js";

/** A VRF name: a link name (empty reads as unset: the loader requires it). */
const VRF_NAME = refine(string, (name, key) => {
  if (name.length > 15 || name === "." || name === ".." || /[/:\s]/.test(name)) {
    throw invalidKey(key, name, "want a link name: at most 15 characters, no '/', ':' or whitespace");
  }
  return name;
});

/** The Go plugin's VRFNetConf. A `table` of 0 chooses a free table when the VRF is created. */
export const VRF_SCHEMA = struct("VRFNetConf", {
  ...NET_CONF_FIELDS,
  vrfname: withDefault(VRF_NAME, "", { orEmpty: true }),
  table: withDefault(uint32, 0),
});

/** A vrf config: its keys as the schema declares them, and the prevResult in the current version. */
export type VrfConf = Settings<typeof VRF_SCHEMA> & { conf: PluginConf; prevResult?: Result100 };

/** Parses and validates the vrf config: `vrfname` is required. */
export function loadVrfConf(stdin: Buffer): VrfConf {
  const { conf, raw } = loadPluginConf(stdin);
  const c = decodeSettings(VRF_SCHEMA, raw);
  if (!c.vrfname) throw invalidKey("vrfname", c.vrfname, "the name of the VRF to put the interface in is required");
  const n: VrfConf = { ...c, conf };
  const prev = parsePrevResult(conf);
  if (prev) n.prevResult = toCurrentResult(prev);
  return n;
}
