/**
 * The vrf plugin's configuration: `vrfname` (required, a link name) and `table` (the VRF's routing table;
 * 0 or absent picks the first id no other VRF of the namespace uses). Errors name the key and value (code 7).
 * @module
 */
import { NET_CONF_FIELDS, type PluginConf } from "#spec/config.js";
import { string, struct, uint32 } from "#go-json/go-decode.js";
import { toCurrentResult, type Result100 } from "#spec/result/index.js";
import { loadPluginConf, parsePrevResult } from "#skel/conf.js";
import { decodeConfig } from "../../common/keys.js";
import { invalidKey } from "#spec/errors.js";

/** The Go plugin's VRFNetConf. */
export const VRF_SCHEMA = struct("VRFNetConf", { ...NET_CONF_FIELDS, vrfname: string, table: uint32 });

export interface VrfConf {
  conf: PluginConf;
  vrfName: string;
  /** 0: choose a free table when the VRF is created. */
  table: number;
  prevResult?: Result100;
}

export function loadVrfConf(stdin: Buffer): VrfConf {
  const { conf, raw } = loadPluginConf(stdin);
  const c = decodeConfig(VRF_SCHEMA, raw);
  const vrfName = c.vrfname ?? "";
  if (!vrfName) throw invalidKey("vrfname", vrfName, "the name of the VRF to put the interface in is required");
  if (vrfName.length > 15 || vrfName === "." || vrfName === ".." || /[/:\s]/.test(vrfName)) {
    throw invalidKey("vrfname", vrfName, "want a link name: at most 15 characters, no '/', ':' or whitespace");
  }
  const table = c.table ?? 0;
  const n: VrfConf = { conf, vrfName, table };
  const prev = parsePrevResult(conf);
  if (prev) n.prevResult = toCurrentResult(prev);
  return n;
}
