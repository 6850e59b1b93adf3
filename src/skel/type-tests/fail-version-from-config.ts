import { loadPluginConf, pluginMain } from "../index.js";
import { VersionInfo } from "#spec/index.js";

// A result labelled with the config's version has a shape only at run time: label it with the version whose shape
// it has (skel prints it in the config's version).
// expect: Type 'string' is not assignable to type '"1.0.0" | "1.1.0"'
await pluginMain({ add: (args) => ({ cniVersion: loadPluginConf(args.stdinData).conf.cniVersion, ips: [{ address: "10.0.0.2/24" }] }) }, new VersionInfo(["1.0.0"]), "");
