/**
 * The vrf plugin's configuration: `vrfname` (required, a link name) and `table` (the VRF's routing table;
 * 0 or absent picks the first id no other VRF of the namespace uses). Errors name the key and value (code 7).
 * @module
 */
import type { PluginConf } from "../../../spec/config.js";
import { toCurrentResult, type Result100 } from "../../../spec/result/index.js";
import { loadPluginConf, parsePrevResult } from "../../../skel/conf.js";
import { invalidKey, optString } from "../../common/keys.js";

const MAX_TABLE = 0xffffffff;

export interface VrfConf {
  conf: PluginConf;
  vrfName: string;
  /** 0: choose a free table when the VRF is created. */
  table: number;
  prevResult?: Result100;
}

export function loadVrfConf(stdin: Buffer): VrfConf {
  const { conf, raw } = loadPluginConf(stdin);
  const vrfName = optString(raw, "vrfname") ?? "";
  if (!vrfName) throw invalidKey("vrfname", raw["vrfname"] ?? "", "the name of the VRF to put the interface in is required");
  if (vrfName.length > 15 || vrfName === "." || vrfName === ".." || /[/:\s]/.test(vrfName)) {
    throw invalidKey("vrfname", vrfName, "want a link name: at most 15 characters, no '/', ':' or whitespace");
  }
  const table = raw["table"] ?? 0;
  if (typeof table !== "number" || !Number.isInteger(table) || table < 0 || table > MAX_TABLE) {
    throw invalidKey("table", table, `want a routing table id from 1 to ${MAX_TABLE}, or 0 to pick a free one`);
  }
  const n: VrfConf = { conf, vrfName, table };
  const prev = parsePrevResult(conf);
  if (prev) n.prevResult = toCurrentResult(prev);
  return n;
}
