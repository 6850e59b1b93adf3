import { pluginMain } from "../index.js";
import { VersionInfo } from "#spec/index.js";

// expect: Property 'address' is missing in type '{ adress: string; }'
await pluginMain({ add: async () => ({ cniVersion: "1.1.0", ips: [{ adress: "10.0.0.2/24" }] }) }, new VersionInfo(["1.1.0"]), "");
