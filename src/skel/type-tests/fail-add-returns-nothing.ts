import { pluginMain, type CmdArgs } from "../index.js";
import { VersionInfo } from "#spec/index.js";

async function add(_args: CmdArgs) {
  // configures something, and forgets to return the result
}
// expect: add returns nothing
await pluginMain({ add, del: () => {} }, new VersionInfo(["0.3.1"]), "");
