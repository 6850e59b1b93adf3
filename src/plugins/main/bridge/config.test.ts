import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { portVlanCommands, taggedVlanCommands } from "#net/link/bridge-vlans.js";
import { ErrorCode } from "#spec/errors.js";
import { assertCniError } from "#testing/cni-error.js";
import { containerPortVlans, loadBridgeConf, parseTrunk, uplinkVlans } from "./config.js";

const stdin = (keys: Record<string, unknown> = {}) => Buffer.from(JSON.stringify({ cniVersion: "1.0.0", name: "net1", type: "bridge", ...keys }));
const load = (keys?: Record<string, unknown>, cniArgs = "") => loadBridgeConf(stdin(keys), cniArgs);

const throwsCni = assertCniError;
const invalid = (keys: Record<string, unknown>, msg: RegExp, cniArgs = "") =>
  throwsCni(() => load(keys, cniArgs), ErrorCode.InvalidNetworkConfig, msg);

describe("bridge config: defaults and keys", () => {
  test("defaults match the Go plugin", () => {
    const n = load();
    assert.deepEqual(
      { ...n, conf: undefined },
      {
        conf: undefined,
        bridge: "cni0",
        isGateway: false,
        isDefaultGateway: false,
        forceAddress: false,
        ipMasq: false,
        hairpinMode: false,
        promiscMode: false,
        vlan: 0,
        vlanFiltering: false,
        preserveDefaultVlan: false,
        macspoofchk: false,
        enabledad: false,
        disableContainerInterface: false,
        portIsolation: false,
        groupFwdMask: 0,
        uplinkInterface: "",
      },
    );
  });

  test("every key is read", () => {
    const n = load({
      bridge: "br9",
      isGateway: true,
      forceAddress: true,
      ipMasq: true,
      ipMasqBackend: "nftables",
      mtu: 1400,
      hairpinMode: true,
      vlan: 7,
      preserveDefaultVlan: true,
      macspoofchk: true,
      enabledad: true,
      portIsolation: true,
    });
    assert.equal(n.bridge, "br9");
    assert.equal(n.isGateway, true);
    assert.equal(n.forceAddress, true);
    assert.equal(n.ipMasq, true);
    assert.equal(n.ipMasqBackend, "nftables");
    assert.equal(n.mtu, 1400);
    assert.equal(n.hairpinMode, true);
    assert.equal(n.vlan, 7);
    assert.equal(n.vlanFiltering, true);
    assert.equal(n.preserveDefaultVlan, true);
    assert.equal(n.macspoofchk, true);
    assert.equal(n.enabledad, true);
    assert.equal(n.portIsolation, true);
  });

  test("isDefaultGateway implies isGateway", () => {
    const n = load({ isDefaultGateway: true });
    assert.equal(n.isGateway, true);
    assert.equal(n.isDefaultGateway, true);
  });

  test("mtu 0 means the kernel default", () => assert.equal(load({ mtu: 0 }).mtu, undefined));
  test("an empty bridge name means cni0", () => assert.equal(load({ bridge: "" }).bridge, "cni0"));
  test("null keys are absent keys", () => assert.equal(load({ mtu: null, isGateway: null }).isGateway, false));
  test("disableContainerInterface without IPAM is fine", () =>
    assert.equal(load({ disableContainerInterface: true }).disableContainerInterface, true));
  test("hairpinMode alone and promiscMode alone are fine", () => {
    assert.equal(load({ hairpinMode: true }).hairpinMode, true);
    assert.equal(load({ promiscMode: true }).promiscMode, true);
  });
});

describe("bridge config: VLANs", () => {
  test("vlanTrunk ids and ranges are merged, sorted and unique", () => {
    assert.deepEqual(parseTrunk([{ id: 20 }, { minID: 5, maxID: 7 }, { id: 6 }, { minID: 4094, maxID: 4094 }]), [5, 6, 7, 20, 4094]);
  });
  test("an item may carry an id and a range; an empty item adds nothing (as in Go)", () => {
    assert.deepEqual(parseTrunk([{ id: 1, minID: 3, maxID: 4 }, {}]), [1, 3, 4]);
  });
  test("vlan and vlanTrunk together: native VLAN plus tagged ones (as in Go)", () => {
    const n = load({ vlan: 3, vlanTrunk: [{ id: 9 }] });
    assert.equal(n.vlan, 3);
    assert.deepEqual(n.vlanTrunk, [9]);
  });
  test("even an empty vlanTrunk list turns VLAN filtering on for a new bridge (as in Go)", () => {
    assert.equal(load({ vlanTrunk: [] }).vlanFiltering, true);
    assert.equal(load({}).vlanFiltering, false);
    assert.equal(load({ vlan: 0 }).vlanFiltering, false);
  });
  test("VLAN IDs out of range are code 7 naming the key and the value", () => {
    invalid({ vlan: 4095 }, /^invalid "vlan": 4095 \(want an integer from 0 to 4094\)$/);
    invalid({ vlan: -1 }, /"vlan": -1/);
    invalid({ vlan: 1.5 }, /"vlan": 1.5 \(want an integer\)/);
    invalid({ vlan: "5" }, /"vlan": "5"/);
    invalid({ vlanTrunk: [{ id: 0 }] }, /^invalid "vlanTrunk\[0\]\.id": 0 /);
    invalid({ vlanTrunk: [{ id: 1 }, { id: 4095 }] }, /"vlanTrunk\[1\]\.id": 4095/);
    invalid({ vlanTrunk: [{ minID: 0, maxID: 3 }] }, /"vlanTrunk\[0\]\.minID": 0/);
    invalid({ vlanTrunk: [{ minID: 3, maxID: 5000 }] }, /"vlanTrunk\[0\]\.maxID": 5000/);
    invalid({ vlanTrunk: [{ minID: 9, maxID: 3 }] }, /"vlanTrunk\[0\]": \{"minID":9,"maxID":3\} \(minID must not exceed maxID\)/);
    invalid({ vlanTrunk: [{ minID: 3 }] }, /"vlanTrunk\[0\]".*minID and maxID go together/);
    invalid({ vlanTrunk: [{ maxID: 3 }] }, /"vlanTrunk\[0\]".*minID and maxID go together/);
    invalid({ vlanTrunk: [5] }, /"vlanTrunk\[0\]": 5/);
    invalid({ vlanTrunk: { id: 5 } }, /"vlanTrunk": \{"id":5\} \(want a list\)/);
  });
});

describe("bridge config: invalid values are code 7 naming the key and the value", () => {
  test("mtu out of range", () => {
    invalid({ mtu: 65536 }, /^invalid "mtu": 65536 /);
    invalid({ mtu: -5 }, /^invalid "mtu": -5 /);
    invalid({ mtu: 60 }, /^invalid "mtu": 60 \(want 0 for the default, or 68 to 65535\)$/);
    invalid({ mtu: "1500" }, /"mtu": "1500" \(want an integer\)/);
  });
  test("hairpinMode together with promiscMode", () => {
    invalid(
      { hairpinMode: true, promiscMode: true },
      /^invalid "hairpinMode": true \(cannot set hairpin mode and promiscuous mode at the same time; "promiscMode" is true too\)$/,
    );
  });
  test("an unknown ipMasqBackend", () => {
    invalid({ ipMasqBackend: "ebtables" }, /^invalid "ipMasqBackend": "ebtables" \(want "iptables" or "nftables"\)$/);
    invalid({ ipMasqBackend: 1 }, /"ipMasqBackend": 1/);
  });
  test("IPAM with disableContainerInterface", () => {
    invalid(
      { disableContainerInterface: true, ipam: { type: "host-local" } },
      /^invalid "disableContainerInterface": true .*"ipam\.type" is "host-local"/,
    );
  });
  test("a bridge name that is not a link name", () => {
    invalid({ bridge: "sixteen-chars-xx" }, /"bridge": "sixteen-chars-xx"/);
    invalid({ bridge: "a/b" }, /"bridge": "a\/b"/);
    invalid({ bridge: "a b" }, /"bridge": "a b"/);
    invalid({ bridge: ".." }, /"bridge": "\.\."/);
    invalid({ bridge: 5 }, /"bridge": 5 \(want a string\)/);
  });
  test("booleans must be booleans", () => {
    for (const key of [
      "isGateway",
      "isDefaultGateway",
      "forceAddress",
      "ipMasq",
      "hairpinMode",
      "promiscMode",
      "macspoofchk",
      "enabledad",
      "disableContainerInterface",
      "portIsolation",
      "preserveDefaultVlan",
    ]) {
      invalid({ [key]: "true" }, new RegExp(`^invalid "${key}": "true" \\(want true or false\\)$`));
    }
  });
});

describe("bridge config: the container MAC", () => {
  const rc = { runtimeConfig: { mac: "02:00:00:00:00:03" } };
  const args = { args: { cni: { mac: "02:00:00:00:00:02" } } };
  const env = "MAC=02:00:00:00:00:01";
  test("runtimeConfig.mac wins over args.cni.mac, which wins over CNI_ARGS MAC", () => {
    assert.equal(load({ ...rc, ...args }, env).mac, "02:00:00:00:00:03");
    assert.equal(load(args, env).mac, "02:00:00:00:00:02");
    assert.equal(load({}, env).mac, "02:00:00:00:00:01");
    assert.equal(load({}).mac, undefined);
  });
  test("MACs are normalised to lower-case colon form", () => {
    assert.equal(load({ runtimeConfig: { mac: "0A-0B-0C-0D-0E-0F" } }).mac, "0a:0b:0c:0d:0e:0f");
  });
  test("an empty MAC is no MAC", () => {
    assert.equal(load({ runtimeConfig: { mac: "" } }, env).mac, "02:00:00:00:00:01");
  });
  test("a bad MAC is code 7 naming where it came from", () => {
    invalid({ runtimeConfig: { mac: "02:00:00:00:00" } }, /^invalid "runtimeConfig\.mac": "02:00:00:00:00" \(want a MAC address/);
    invalid({ args: { cni: { mac: "xx:00:00:00:00:01" } } }, /^invalid "args\.cni\.mac": "xx:00:00:00:00:01"/);
    invalid({}, /^invalid "CNI_ARGS MAC": "nope"/, "MAC=nope");
    invalid({ runtimeConfig: { mac: 5 } }, /"runtimeConfig\.mac": 5 \(want a string\)/);
    invalid({ args: { cni: "mac" } }, /"args\.cni": "mac" \(want an object\)/);
  });
  test("a multicast MAC cannot be an interface's address", () => {
    invalid({ runtimeConfig: { mac: "01:00:5e:00:00:01" } }, /"runtimeConfig\.mac": "01:00:5e:00:00:01" \(a multicast MAC/);
  });
  test("CNI_ARGS: unknown keys need IgnoreUnknown, as in Go", () => {
    throwsCni(() => load({}, "FOO=bar"), ErrorCode.InvalidEnvironmentVariables, /unknown args/);
    assert.equal(load({}, "IgnoreUnknown=1;FOO=bar;MAC=02:00:00:00:00:09").mac, "02:00:00:00:00:09");
    throwsCni(() => load({}, "MAC"), ErrorCode.InvalidEnvironmentVariables, /invalid pair/);
  });
});

describe("VLAN plan (covered here because this kernel has no bridge VLAN filtering)", () => {
  test("vlan: default PVID removed, the VLAN untagged native", () => {
    const vlans = containerPortVlans(load({ vlan: 7 }))!;
    assert.deepEqual(portVlanCommands("veth0", vlans, [{ vlan: 1 }]), [
      ["del", "dev", "veth0", "vid", "1", "master"],
      ["add", "dev", "veth0", "vid", "7", "pvid", "untagged", "master"],
    ]);
  });
  test("trunk without vlan: native VLAN 1 plus tagged ids; ranges of existing VLANs removed whole", () => {
    const vlans = containerPortVlans(load({ vlanTrunk: [{ id: 9 }, { minID: 20, maxID: 21 }] }))!;
    assert.deepEqual(portVlanCommands("veth0", vlans, [{ vlan: 1 }, { vlan: 5, vlanEnd: 6 }]), [
      ["del", "dev", "veth0", "vid", "1", "master"],
      ["del", "dev", "veth0", "vid", "5-6", "master"],
      ["add", "dev", "veth0", "vid", "1", "pvid", "untagged", "master"],
      ["add", "dev", "veth0", "vid", "9", "master"],
      ["add", "dev", "veth0", "vid", "20", "master"],
      ["add", "dev", "veth0", "vid", "21", "master"],
    ]);
  });
  test("preserveDefaultVlan keeps what the port has", () => {
    const vlans = containerPortVlans(load({ vlan: 3, preserveDefaultVlan: true }))!;
    assert.deepEqual(portVlanCommands("p", vlans, [{ vlan: 1 }]), [["add", "dev", "p", "vid", "3", "pvid", "untagged", "master"]]);
  });
  test("no vlan keys: no VLAN work at all", () => {
    assert.equal(containerPortVlans(load({})), undefined);
  });
});

describe("bridge config: groupFwdMask (containernetworking/plugins#1254)", () => {
  test("LLDP (0x4000) and 802.1X (0x8) groups, in any JSON number form Go's int takes", () => {
    assert.equal(load({ groupFwdMask: 0x4000 }).groupFwdMask, 16384);
    assert.equal(load({ groupFwdMask: 0x4008 }).groupFwdMask, 16392);
    assert.equal(load({ groupFwdMask: 65528 }).groupFwdMask, 0xfff8);
    assert.equal(load({ groupFwdMask: 0 }).groupFwdMask, 0);
    assert.equal(load({ groupFwdMask: null }).groupFwdMask, 0);
  });

  test("outside 0 to 65535 is refused, as Go's loadNetConf refuses it (`invalid groupFwdMask`)", () => {
    invalid({ groupFwdMask: -8 }, /"groupFwdMask": -8 \(want a mask from 0 to 65535/);
    invalid({ groupFwdMask: 65536 }, /"groupFwdMask": 65536 \(want a mask from 0 to 65535/);
  });

  test("bits 0 to 2 (STP, pause, LACP) are refused up front: the kernel refuses them (Go fails the ADD after IPAM)", () => {
    for (const v of [1, 2, 4, 0x4001, 7]) invalid({ groupFwdMask: v }, /"groupFwdMask".*bits 0 to 2/);
  });

  test("a non-integer is code 7 naming the key", () => {
    invalid({ groupFwdMask: "0x4000" }, /"groupFwdMask"/);
    invalid({ groupFwdMask: 1.5 }, /"groupFwdMask"/);
  });
});

describe("bridge config: uplinkInterface (containernetworking/plugins#1195)", () => {
  test("a link name; empty is unset", () => {
    assert.equal(load({ uplinkInterface: "eth1" }).uplinkInterface, "eth1");
    assert.equal(load({ uplinkInterface: "" }).uplinkInterface, "");
    invalid({ uplinkInterface: "a/b" }, /"uplinkInterface": "a\/b"/);
    invalid({ uplinkInterface: "x".repeat(16) }, /"uplinkInterface"/);
  });

  test("the uplink carries `vlan` and every vlanTrunk ID, tagged", () => {
    assert.deepEqual(uplinkVlans(load({ vlan: 100 })), [100]);
    assert.deepEqual(uplinkVlans(load({ vlan: 7, vlanTrunk: [{ id: 101 }, { minID: 200, maxID: 202 }, { id: 7 }] })), [7, 101, 200, 201, 202]);
    assert.deepEqual(uplinkVlans(load({})), []);
  });

  test("VLANs the uplink has already are left as they are (re-adding would clear a native VLAN's flags)", () => {
    assert.deepEqual(taggedVlanCommands("eth1", [1, 100, 200, 201], [{ vlan: 1 }, { vlan: 200, vlanEnd: 201 }]), [
      ["add", "dev", "eth1", "vid", "100", "master"],
    ]);
    assert.deepEqual(taggedVlanCommands("eth1", [], [{ vlan: 1 }]), []);
  });
});
