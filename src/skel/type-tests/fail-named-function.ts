import { pluginMain, type CmdArgs } from "../index.js";
import { VersionInfo } from "#spec/index.js";

// A named function's literal: its cniVersion is a string to the compiler, so the shape is checked against every
// version's (here none has "macc").
async function add(_args: CmdArgs) {
  return { cniVersion: "1.0.0", interfaces: [{ name: "eth0", sandbox: "/var/run/netns/x", mtu: 1500, macc: "02:00:00:00:00:01" }] };
}
// expect: interfaces[].macc is not a key of a 1.x result
await pluginMain({ add, del: () => {} }, new VersionInfo(["1.0.0"]), "");
