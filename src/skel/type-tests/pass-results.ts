import { loadPluginConf, parsePrevResult, pluginMain, type CmdArgs } from "../index.js";
import { VersionInfo, type Result, type Result100 } from "#spec/index.js";

const info = new VersionInfo(["0.4.0", "1.0.0", "1.1.0"]);
// Results of each version, built in place.
await pluginMain({
  add: async () => ({
    cniVersion: "1.1.0",
    interfaces: [{ name: "eth0", mac: "02:00:00:00:00:01", mtu: 1500, sandbox: "/var/run/netns/x" }],
    ips: [{ interface: 0, address: "10.0.0.2/24", gateway: "10.0.0.1" }],
    routes: [{ dst: "0.0.0.0/0", gw: "10.0.0.1", mtu: 1400 }],
    dns: { nameservers: ["10.0.0.1"] },
  }),
  check: async () => {},
  del: () => {},
}, info, "");
await pluginMain({ add: () => ({ cniVersion: "0.4.0", ips: [{ version: "4", address: "10.0.0.2/24" }] }) }, info, "");
await pluginMain({ add: () => ({ cniVersion: "0.2.0", ip4: { ip: "10.0.0.2/24", routes: [{ dst: "0.0.0.0/0" }] } }) }, info, "");
// The previous result passed on, a string printed verbatim, nothing.
await pluginMain({ add: (args) => parsePrevResult(loadPluginConf(args.stdinData).conf) ?? "{}", status: () => undefined }, info, "");
// Annotated handlers and a loader.
async function add(_args: CmdArgs): Promise<Result100> {
  return { cniVersion: "1.0.0", ips: [{ address: "10.0.0.2/24" }] };
}
const gc = async (_args: CmdArgs): Promise<Result | void> => undefined;
await pluginMain({ add, gc }, info, "");
await pluginMain(async () => ({ add }), info, "");
