import { pluginMain } from "../index.js";
import { VersionInfo } from "#spec/index.js";

// expect: del ... DEL is in every CNI version
await pluginMain({ add: async () => "{}" }, new VersionInfo(["0.3.1"]), "");
