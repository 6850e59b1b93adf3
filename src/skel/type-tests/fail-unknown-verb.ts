import { pluginMain } from "../index.js";
import { VersionInfo } from "#spec/index.js";

// expect: chek is not a verb
await pluginMain({ add: async () => "{}", del: () => {}, chek: async () => {} }, new VersionInfo(["0.3.1"]), "");
