/**
 * What dnsname asks of the host beyond its files, in one place: the bridge's addresses (the containers'
 * nameservers), the network's dnsmasq (found, started or reloaded, stopped: dnsmasq.ts) and the INPUT rules that
 * let DNS through to the bridge (firewall.ts).
 * @module
 */
import { parseCIDR } from "#ip/ip.js";
import { NetOpError } from "#net/errors.js";
import type { IPFamilyNum } from "#net/firewall/iptables.js";
import { isGlobalUnicast } from "#net/link/link-addresses.js";
import { ip } from "#net/link/links.js";
import { NetNS } from "#net/netns.js";
import { invalidConfig } from "#spec/errors.js";
import { dnsmasqBinary, type NetworkFiles, reloadDnsmasq, runningDnsmasq, stopDnsmasq } from "./dnsmasq.js";
import { acceptDns, type InputRule, removeDnsRulesUnlessShared, removeRules } from "./firewall.js";
import type { NetworkDir } from "./state.js";

export interface DnsnameHost {
  /** The bridge's global unicast addresses, in the kernel's order; a code-7 error when there is no such bridge. */
  nameservers(bridge: string): Promise<string[]>;
  /** The dnsmasq binary; a CNI error with `code` when there is none. */
  dnsmasqBinary(code?: number): string;
  /** The pid of the network's running dnsmasq; undefined when none runs. */
  runningDnsmasq(files: NetworkFiles): number | undefined;
  /** Makes the network's dnsmasq reread its hosts file, starting it when none runs. */
  reloadDnsmasq(binary: string, files: NetworkFiles): Promise<void>;
  /** Stops the network's dnsmasq, if one runs. */
  stopDnsmasq(files: NetworkFiles): Promise<void>;
  /** Inserts the missing accept rules for `bridge`; the ones it inserted. */
  acceptDns(bridge: string, families: readonly IPFamilyNum[], warn: (msg: string) => void): Promise<InputRule[]>;
  /** Removes the rules of the network's bridge, unless another network's dnsmasq listens on it. */
  removeDnsRulesUnlessShared(d: NetworkDir, bridge: string | undefined, warn: (msg: string) => void): Promise<void>;
  removeRules(rules: readonly InputRule[], warn: (msg: string) => void): Promise<void>;
}

const realHost: DnsnameHost = {
  nameservers: async (bridge) => {
    try {
      const addresses = await ip.listAddresses(NetNS.host, bridge);
      return addresses
        .map((a) => parseCIDR(a.cidr).ip)
        .filter(isGlobalUnicast)
        .map((a) => a.text);
    } catch (e) {
      if (e instanceof NetOpError && e.kind === "not-found") {
        throw invalidConfig(`the network's bridge ${bridge} (the prevResult's first interface) does not exist`, e);
      }
      throw e;
    }
  },
  dnsmasqBinary,
  runningDnsmasq,
  reloadDnsmasq,
  stopDnsmasq,
  acceptDns,
  removeDnsRulesUnlessShared,
  removeRules,
};

/**
 * The crash simulator's kernel model (src/testing/crash/stores.ts): while set, dnsmasq and the rules are the
 * model's, so the plugin's own ADD, CHECK, DEL and GC run over a host the simulator can crash. Nothing in the
 * product sets it.
 */
let model: DnsnameHost | undefined;
export function useKernelModel(m: DnsnameHost | undefined): void {
  model = m;
}

/** The host dnsname works on: the real one, unless the crash simulator set its model. */
export const dnsnameHost = (): DnsnameHost => model ?? realHost;
