import { loadPluginConf, parsePrevResult, pluginMain, type CmdArgs } from "../index.js";
import { pluginSupports, versionsStartingFrom, VersionInfo, type Result, type Result100 } from "#spec/index.js";

const info = new VersionInfo(["0.4.0", "1.0.0", "1.1.0"]);
const check = async () => {};
const del = () => {};
// Results of each version, built in place in an arrow function.
await pluginMain(
  {
    add: async () => ({
      cniVersion: "1.1.0",
      interfaces: [{ name: "eth0", mac: "02:00:00:00:00:01", mtu: 1500, sandbox: "/var/run/netns/x" }],
      ips: [{ interface: 0, address: "10.0.0.2/24", gateway: "10.0.0.1" }],
      routes: [{ dst: "0.0.0.0/0", gw: "10.0.0.1", mtu: 1400 }],
      dns: { nameservers: ["10.0.0.1"] },
    }),
    check,
    del,
  },
  info,
  "",
);
await pluginMain({ add: () => ({ cniVersion: "0.4.0", ips: [{ version: "4", address: "10.0.0.2/24" }] }), check, del }, info, "");
await pluginMain({ add: () => ({ cniVersion: "0.2.0", ip4: { ip: "10.0.0.2/24", routes: [{ dst: "0.0.0.0/0" }] } }), del }, pluginSupports("0.2.0"), "");
// A named function returning a literal (its cniVersion a string to the compiler).
async function namedAdd(_args: CmdArgs) {
  return { cniVersion: "1.0.0", ips: [{ address: "10.0.0.2/24", gateway: "10.0.0.1" }] };
}
await pluginMain({ add: namedAdd, check, del }, info, "");
// `as const` on the whole result.
const constant = { cniVersion: "1.1.0", ips: [{ address: "10.0.0.2/24" }], dns: { nameservers: ["10.0.0.1"] } } as const;
await pluginMain({ add: () => constant, check, del }, new VersionInfo(versionsStartingFrom("0.4.0")), "");
// An annotated return.
async function add(_args: CmdArgs): Promise<Result100> {
  return { cniVersion: "1.0.0", ips: [{ address: "10.0.0.2/24" }] };
}
const gc = async (_args: CmdArgs): Promise<Result | void> => undefined;
await pluginMain({ add, check, del, gc }, info, "");
// The previous result passed on, a string printed verbatim, nothing from STATUS.
await pluginMain({ add: (args) => parsePrevResult(loadPluginConf(args.stdinData).conf) ?? "{}", check, del, status: () => undefined }, info, "");
// Versions before 0.4.0 have no CHECK: no check handler needed.
await pluginMain({ add, del }, new VersionInfo(["0.3.0", "0.3.1"]), "");
