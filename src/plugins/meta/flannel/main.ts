/**
 * flannel: the meta plugin that turns flanneld's view of this node (subnet.env) into a config for another
 * plugin — bridge with host-local by default — and delegates to it (through src/invoke, so the delegate can be
 * tscni's own, run in-process, or any executable in CNI_PATH such as Go's).
 *
 * ADD renders the delegate config (render.ts), saves it under `dataDir` before delegating, and prints the
 * delegate's result; if the delegate's ADD fails, its DEL runs with the same config and the saved copy goes.
 * DEL delegates DEL with the saved copy (subnet.env is not needed any more) and removes it once the delegate
 * succeeded; with nothing saved (or an unusable copy) it delegates DEL with the delegate rendered again, when
 * subnet.env still renders one (a power loss can lose the copy and keep the delegate's state). Beyond the flannel-io plugin: CHECK delegates CHECK with the saved
 * copy and fails when the node's subnet has changed since ADD (upstream's CHECK does nothing); DEL and CHECK hand
 * the delegate the prevResult they were given (upstream passes none, so its delegate cannot clean up by address
 * once the container is gone); STATUS reports a missing or broken subnet.env as "plugin not available" (code 50)
 * and then asks the delegate.
 * @module
 */

import { isJsonObject, type JsonObject, jsonEqual, parseJson } from "#go-json/json.js";
import { delegateAdd, delegateCheck, delegateDel, delegateStatus } from "#invoke/plugin.js";
import type { CmdArgs, PluginModule } from "#skel/skel.js";
import { decodePluginConf } from "#spec/config.js";
import { CniError, failure, messageOf, pluginNotAvailable } from "#spec/errors.js";
import type { Result } from "#spec/result/index.js";
import { decodeFlannelConf, FLANNEL_SCHEMA, type FlannelConf, loadFlannelConf } from "./config.js";
import { encodeDelegate, renderDelegate } from "./render.js";
import { readDelegateConfig, removeDelegateConfig, saveDelegateConfig, savedConfigPath } from "./saved.js";
import { loadSubnetEnv } from "./subnet-env.js";

/** A warning on this call's stderr. */
const warn = (args: CmdArgs, msg: string) => args.stderr.write(`flannel: ${msg}\n`);
/** Delegations run with this call's environment and stderr (never the process's). */
const callOf = (args: CmdArgs) => ({ env: args.env, stderr: args.stderr });

async function add(args: CmdArgs): Promise<Result> {
  const n = loadFlannelConf(args.stdinData);
  const env = await loadSubnetEnv(n.subnetFile);
  const delegate = renderDelegate(n, env);
  const type = delegate["type"] as string;
  const bytes = Buffer.from(encodeDelegate(delegate));
  await saveDelegateConfig(n.dataDir, args.containerID, bytes);
  try {
    return await delegateAdd(type, bytes, callOf(args));
  } catch (e) {
    // A delegate may fail half-way (Go's bridge leaves its veth); its DEL clears that, and with nothing left
    // the saved copy can go. If the DEL fails too, the copy stays for the runtime's own DEL.
    try {
      await delegateDel(type, bytes, callOf(args));
      await removeDelegateConfig(n.dataDir, args.containerID);
    } catch (undo) {
      warn(args, `could not undo the failed ADD of ${type}: ${messageOf(undo)}`);
    }
    throw e;
  }
}

/** A saved delegate config as an object with its type; undefined when it is not one (it is then left alone). */
function savedDelegate(args: CmdArgs, n: FlannelConf, containerID: string, bytes: Buffer): { raw: JsonObject; type: string } | undefined {
  try {
    const raw = parseJson(bytes);
    if (!isJsonObject(raw)) throw new Error("not a JSON object");
    const type = decodePluginConf(raw).type;
    if (!type) throw new Error("it names no plugin type");
    return { raw, type };
  } catch (e) {
    warn(args, `the saved delegate config ${savedConfigPath(n.dataDir, containerID)} is unusable (${messageOf(e)})`);
    return undefined;
  }
}

/** The saved config with the caller's prevResult (the delegate's own result), when the caller has one. */
function withPrevResult(n: FlannelConf, raw: JsonObject, bytes: Buffer): Buffer {
  if (!n.conf.prevResult) return bytes;
  return Buffer.from(encodeDelegate({ ...raw, prevResult: n.conf.prevResult }));
}

async function del(args: CmdArgs): Promise<void> {
  const n = decodeFlannelConf(args.stdinData);
  if (!n.dataDir) return; // ADD refuses an empty dataDir, so nothing was saved
  const bytes = await readDelegateConfig(n.dataDir, args.containerID);
  const saved = bytes && savedDelegate(args, n, args.containerID, bytes);
  if (saved) {
    await delegateDel(saved.type, withPrevResult(n, saved.raw, bytes), callOf(args));
  } else {
    // Empty or torn (what a crash can leave, docs/state.md), or none: a power loss can keep the delegate's state
    // and lose the saved copy's rename. The delegate as ADD rendered it from this config and subnet.env, if those
    // still say it: its DEL releases by container ID what the copy would have named (and finds nothing after a DEL).
    let rendered: JsonObject | undefined;
    try {
      rendered = renderDelegate(n, await loadSubnetEnv(n.subnetFile));
    } catch (e) {
      if (bytes) warn(args, `and the delegate cannot be rendered again (${messageOf(e)}): nothing is deleted through it`);
    }
    if (rendered) await delegateDel(rendered["type"] as string, withPrevResult(n, rendered, Buffer.from(encodeDelegate(rendered))), callOf(args));
  }
  if (bytes) await removeDelegateConfig(n.dataDir, args.containerID);
}

async function check(args: CmdArgs): Promise<void> {
  const n = decodeFlannelConf(args.stdinData);
  const bytes = n.dataDir ? await readDelegateConfig(n.dataDir, args.containerID) : undefined;
  if (!bytes) {
    throw failure(
      `no saved delegate config for container ${args.containerID}`,
      `${savedConfigPath(n.dataDir, args.containerID)} does not exist: ADD never ran with this dataDir, or DEL already did`,
    );
  }
  const saved = savedDelegate(args, n, args.containerID, bytes);
  if (!saved) throw failure(`the saved delegate config ${savedConfigPath(n.dataDir, args.containerID)} is unusable`);
  await checkSubnetUnchanged(n, saved.raw);
  await delegateCheck(saved.type, withPrevResult(n, saved.raw, bytes), callOf(args));
}

/**
 * The node's subnet must still be the one ADD gave the delegate: flanneld that came back with another lease
 * leaves the container with an address outside this node's subnet. A subnet.env that cannot be read says
 * nothing about the attachment, so it is not a failure here.
 */
async function checkSubnetUnchanged(n: FlannelConf, saved: JsonObject): Promise<void> {
  const env = await loadSubnetEnv(n.subnetFile).catch(() => undefined);
  const savedIpam = saved["ipam"];
  if (!env || !isJsonObject(savedIpam) || savedIpam["ranges"] === undefined) return;
  const now = renderDelegate(n, env)["ipam"] as JsonObject;
  if (!jsonEqual(now["ranges"], savedIpam["ranges"])) {
    throw failure(
      `this node's flannel subnet changed since ADD`,
      `ADD used ranges ${JSON.stringify(savedIpam["ranges"])}, ${n.subnetFile} now gives ${JSON.stringify(now["ranges"])}`,
    );
  }
}

async function status(args: CmdArgs): Promise<void> {
  const n = loadFlannelConf(args.stdinData);
  let env;
  try {
    env = await loadSubnetEnv(n.subnetFile);
  } catch (e) {
    const cause = CniError.from(e);
    throw pluginNotAvailable(cause.msg, cause.details);
  }
  const delegate = renderDelegate(n, env);
  await delegateStatus(delegate["type"] as string, Buffer.from(encodeDelegate(delegate)), callOf(args));
}

export const plugin: PluginModule = {
  funcs: { add, del, check, status },
  config: { schema: FLANNEL_SCHEMA, parse: loadFlannelConf },
};
