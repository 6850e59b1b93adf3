import { pluginMain } from "../index.js";
import { VersionInfo } from "#spec/index.js";

// expect: cniVersion '1.0' is not a CNI version
await pluginMain({ add: () => ({ cniVersion: "1.0", ips: [{ address: "10.0.0.2/24" }] }), del: () => {} }, new VersionInfo(["1.0.0"]), "");
