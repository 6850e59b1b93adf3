/**
 * The firewall plugin's backends behind one interface: iptables (the Go plugin's rules), nftables (our own
 * table, see net/firewall-nftables) and firewalld (zone sources over D-Bus; the ingress policy still goes to
 * iptables, as in the Go plugin). The default, as in the Go plugin: firewalld when it runs, else iptables.
 * @module
 */
import { failure } from "../../../spec/errors.js";
import type { GCAttachment } from "../../../spec/config.js";
import { type Firewalld, FIREWALLD_NAME } from "../../../net/firewalld.js";
import type { FirewallMark } from "../../../net/firewall-marks.js";
import { ensureFirewallRules, firewallMarks, hostCidr, missingFirewallRules, removeAddressRules, type IsolationPolicy } from "./iptables.js";
import { nftAllow, nftCollectGarbage, nftFirewallMarks, nftMissing, nftRevoke } from "./nftables.js";
import type { Backend, FirewallConf } from "./config.js";
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

export interface FirewallBackend {
  readonly name: Backend;
  add(a: Attachment): Promise<void>;
  del(a: Attachment): Promise<void>;
  /** What is missing, as readable lines; empty when everything is in place. */
  check(a: Attachment): Promise<string[]>;
  /** Puts back what is missing after a firewall reload; resolves whether anything was. */
  restore(a: Attachment): Promise<boolean>;
  /** What shows the attachment's rules are there (see net/firewall-marks); none for firewalld's sources. */
  marks(a: Attachment): FirewallMark[];
  /**
   * Removes what the `stale` attachments (records of attachments not in `valid`) were given, except addresses
   * that `claimed` says a live attachment still uses.
   */
  gc(network: string, valid: readonly GCAttachment[], stale: readonly AttachmentRecord[], claimed: ReadonlySet<string>): Promise<void>;
}

const unclaimed = (stale: readonly AttachmentRecord[], claimed: ReadonlySet<string>) =>
  [...new Set(stale.flatMap((r) => r.addresses.map(hostCidr)))].filter((a) => !claimed.has(a));

class IptablesBackend implements FirewallBackend {
  readonly name = "iptables" as const;
  constructor(private readonly adminChain: string) {}
  async add(a: Attachment) {
    await ensureFirewallRules({ addresses: a.addresses, adminChain: this.adminChain, isolation: a.isolation });
  }
  del(a: Attachment) {
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
  gc(_network: string, _valid: readonly GCAttachment[], stale: readonly AttachmentRecord[], claimed: ReadonlySet<string>) {
    return removeAddressRules(unclaimed(stale, claimed));
  }
}

class NftablesBackend implements FirewallBackend {
  readonly name = "nftables" as const;
  add(a: Attachment) {
    return nftAllow(a);
  }
  del(a: Attachment) {
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
  gc(network: string, valid: readonly GCAttachment[]) {
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
  }
  async del(a: Attachment) {
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
  async gc(_network: string, _valid: readonly GCAttachment[], stale: readonly AttachmentRecord[], claimed: ReadonlySet<string>) {
    if (!this.isRunning) return;
    for (const r of stale) {
      for (const source of unclaimed([r], claimed)) await this.fw.removeSource(r.zone ?? this.zone, source).catch(() => undefined);
    }
  }
}

/** The configured backend, or firewalld when it runs (`isRunning`, by default asked of `fw`) and iptables otherwise. */
export async function selectBackend(n: FirewallConf, fw: Firewalld, isRunning = () => fw.running()): Promise<FirewallBackend> {
  const backend = n.backend;
  if (backend === "iptables") return new IptablesBackend(n.adminChain);
  if (backend === "nftables") return new NftablesBackend();
  const running = await isRunning();
  if (backend === "firewalld" || running) return new FirewalldBackend(n.zone, n.adminChain, fw, running);
  return new IptablesBackend(n.adminChain);
}
