import { pluginMain, type CmdArgs } from "../index.js";
import { VersionInfo } from "#spec/index.js";

async function add(_args: CmdArgs) {
  return { cniVersion: "1.0.0" as const, interfaces: [{ name: "eth0", sandbox: "/var/run/netns/x", mtu: 1500, macc: "02:00:00:00:00:01" }] };
}
// expect: property 'macc' ... is not a key of the result shape of this cniVersion
await pluginMain({ add }, new VersionInfo(["1.0.0"]), "");
