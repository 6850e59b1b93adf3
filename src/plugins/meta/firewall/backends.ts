/**
 * The firewall plugin's backends behind one interface: iptables (the Go plugin's rules), nftables (our own
 * table, see net/firewall-nftables) and firewalld (zone sources over D-Bus; the ingress policy still goes to
 * iptables, as in the Go plugin). The default, as in the Go plugin: firewalld when it runs, else iptables.
 * @module
 */

import { type AttachmentRules, firewallFor, type NetworkGarbage, type RuleEngines } from "#net/firewall/firewall-driver.js";
import { FIREWALLD_NAME, type Firewalld } from "#net/firewall/firewalld.js";
import { failure } from "#spec/errors.js";
import type { Backend, FirewallConf } from "./config.js";
import { ensureFirewallRules, firewallMarks, hostCidr, type IsolationPolicy, missingFirewallRules, removeAddressRules } from "./iptables.js";
import { nftAllow, nftCollectGarbage, nftFirewallMarks, nftMissing, nftRevoke } from "./nftables.js";
import type { AttachmentRecord } from "./records.js";

/** One container attachment as the backends see it. */
export interface Attachment {
  network: string;
  containerID: string;
  ifName: string;
  /** The container's addresses (`addr/prefix`); may be empty on DEL. */
  addresses: string[];
  isolation?: { bridge: string; policy: IsolationPolicy };
}

/** What GC knows: the network's valid attachments, the records of the others, and the addresses still claimed. */
export interface FirewallGarbage extends NetworkGarbage {
  /** Records of attachments not in `valid`. */
  stale: readonly AttachmentRecord[];
  /** Addresses a live attachment's record still uses (never removed). */
  claimed: ReadonlySet<string>;
}

/** One backend's rules for an attachment (net/firewall-driver's contract; firewalld is a third implementation). */
export type FirewallBackend = AttachmentRules<Attachment, Attachment, FirewallGarbage, Backend>;

const unclaimed = (stale: readonly AttachmentRecord[], claimed: ReadonlySet<string>) =>
  [...new Set(stale.flatMap((r) => r.addresses.map(hostCidr)))].filter((a) => !claimed.has(a));

class IptablesBackend implements FirewallBackend {
  readonly name = "iptables" as const;
  constructor(private readonly adminChain: string) {}
  add(a: Attachment) {
    return ensureFirewallRules({ addresses: a.addresses, adminChain: this.adminChain, isolation: a.isolation });
  }
  remove(a: Attachment) {
    return removeAddressRules(a.addresses);
  }
  check(a: Attachment) {
    return missingFirewallRules({ addresses: a.addresses, adminChain: this.adminChain, isolation: a.isolation });
  }
  restore(a: Attachment) {
    return ensureFirewallRules({ addresses: a.addresses, adminChain: this.adminChain, isolation: a.isolation });
  }
  marks(a: Attachment) {
    return firewallMarks({ addresses: a.addresses, adminChain: this.adminChain, isolation: a.isolation });
  }
  collect({ stale, claimed }: FirewallGarbage) {
    return removeAddressRules(unclaimed(stale, claimed));
  }
}

class NftablesBackend implements FirewallBackend {
  readonly name = "nftables" as const;
  async add(a: Attachment) {
    await nftAllow(a);
    return true;
  }
  remove(a: Attachment) {
    return nftRevoke(a);
  }
  check(a: Attachment) {
    return nftMissing(a);
  }
  async restore(a: Attachment) {
    if ((await nftMissing(a)).length === 0) return false;
    await nftAllow(a);
    return true;
  }
  marks() {
    return nftFirewallMarks();
  }
  collect({ network, valid }: FirewallGarbage) {
    return nftCollectGarbage(network, valid);
  }
}

/**
 * firewalld: each address becomes a source of the zone. When firewalld does not run, ADD and CHECK fail with
 * a clear error; DEL and GC have nothing to do (firewalld's runtime sources went with it).
 */
class FirewalldBackend implements FirewallBackend {
  readonly name = "firewalld" as const;
  constructor(
    private readonly zone: string,
    private readonly adminChain: string,
    private readonly fw: Firewalld,
    private readonly isRunning: boolean,
  ) {}

  private requireRunning(): void {
    if (!this.isRunning) {
      throw failure(
        `backend "firewalld": firewalld is not running`,
        `nothing owns ${FIREWALLD_NAME} on the system bus (or busctl cannot reach the bus); start firewalld or choose "backend": "iptables" or "nftables"`,
      );
    }
  }
  async add(a: Attachment) {
    this.requireRunning();
    for (const address of a.addresses) await this.fw.addSource(this.zone, hostCidr(address));
    if (a.isolation) await ensureFirewallRules({ addresses: a.addresses, adminChain: this.adminChain, forward: false, isolation: a.isolation });
    return true;
  }
  async remove(a: Attachment) {
    if (!this.isRunning) return;
    for (const address of a.addresses) await this.fw.removeSource(this.zone, hostCidr(address)).catch(() => undefined);
  }
  async check(a: Attachment) {
    this.requireRunning();
    const problems: string[] = [];
    for (const address of a.addresses) {
      const source = hostCidr(address);
      if (!(await this.fw.querySource(this.zone, source))) problems.push(`${source} is not a source of firewalld zone ${this.zone}`);
    }
    if (a.isolation)
      problems.push(...(await missingFirewallRules({ addresses: a.addresses, adminChain: this.adminChain, forward: false, isolation: a.isolation })));
    return problems;
  }
  /** firewalld forgets sources added at run time when it reloads: they are added again (and the ingress policy's rules). */
  async restore(a: Attachment) {
    this.requireRunning();
    let changed = false;
    for (const address of a.addresses) {
      const source = hostCidr(address);
      if (await this.fw.querySource(this.zone, source)) continue;
      await this.fw.addSource(this.zone, source);
      changed = true;
    }
    if (a.isolation)
      changed =
        (await ensureFirewallRules({ addresses: a.addresses, adminChain: this.adminChain, forward: false, isolation: a.isolation })) || changed;
    return changed;
  }
  marks(a: Attachment) {
    return a.isolation ? firewallMarks({ addresses: a.addresses, adminChain: this.adminChain, forward: false, isolation: a.isolation }) : [];
  }
  async collect({ stale, claimed }: FirewallGarbage) {
    if (!this.isRunning) return;
    for (const r of stale) {
      for (const source of unclaimed([r], claimed)) await this.fw.removeSource(r.zone ?? this.zone, source).catch(() => undefined);
    }
  }
}

/** The iptables and nftables backends of a config (the admin chain is iptables'). */
const ruleEngines = (adminChain: string): RuleEngines<FirewallBackend> => ({
  iptables: new IptablesBackend(adminChain),
  nftables: new NftablesBackend(),
});

/**
 * The configured backend, or firewalld when it runs (`isRunning`, by default asked of `fw`) and iptables
 * otherwise (the Go plugin's default; iptables and nftables are chosen by net/firewall-driver).
 */
/**
 * The crash simulator's kernel model (src/testing/crash/stores.ts): while set, every call's backend is the one it
 * makes, so the plugin's own code runs over rules the simulator can crash. Nothing in the product sets it.
 */
let kernelModel: ((n: FirewallConf) => FirewallBackend) | undefined;
export function useKernelModel(make: ((n: FirewallConf) => FirewallBackend) | undefined): void {
  kernelModel = make;
}

export async function selectBackend(n: FirewallConf, fw: Firewalld, isRunning = () => fw.running()): Promise<FirewallBackend> {
  if (kernelModel) return kernelModel(n);
  if (n.backend === "iptables" || n.backend === "nftables") return firewallFor(ruleEngines(n.iptablesAdminChainName), n.backend);
  const running = await isRunning();
  if (n.backend === "firewalld" || running) return new FirewalldBackend(n.firewalldZone, n.iptablesAdminChainName, fw, running);
  return firewallFor(ruleEngines(n.iptablesAdminChainName), "iptables");
}
