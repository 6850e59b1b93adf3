import { pluginMain } from "../index.js";
import { VersionInfo } from "#spec/index.js";

// expect: ips[].adress is not a key of a 1.1.0 result
await pluginMain({ add: async () => ({ cniVersion: "1.1.0", ips: [{ adress: "10.0.0.2/24" }] }), del: () => {} }, new VersionInfo(["1.1.0"]), "");
