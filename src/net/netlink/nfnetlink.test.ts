/**
 * net/netlink/nfnetlink.ts without a kernel: every rule shape the plugins write, in both families, encodes to the bytes
 * iptables-nft sends (pinned here by digest and length: nfnetlink.integration.test.ts compares them with
 * iptables-restore's, expression for expression) and renders back as `iptables -S` prints it; words outside the
 * vocabulary encode to nothing.
 */

import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { test } from "node:test";
import { encodeRule, NFPROTO_IPV4, NFPROTO_IPV6, renderRule, ruleJump } from "./nfnetlink.js";

const familyOf = (f: "4" | "6") => (f === "6" ? NFPROTO_IPV6 : NFPROTO_IPV4);

/** Family, words after `-A <chain>`, the encoded expressions' sha256 (first 16 hex digits) and length, their rendering, the jump. */
const ENCODED: ReadonlyArray<
  readonly [family: "4" | "6", args: readonly string[], digest: string, length: number, rendered: string, jump: string | null]
> = [
  [
    "4",
    ["-m", "comment", "--comment", "CNI firewall plugin rules", "-j", "CNI-FORWARD"],
    "acac318fd7d8d472",
    408,
    '-m comment --comment "CNI firewall plugin rules" -j CNI-FORWARD',
    "CNI-FORWARD",
  ],
  [
    "4",
    ["-d", "10.2.3.4/32", "-m", "conntrack", "--ctstate", "RELATED,ESTABLISHED", "-j", "ACCEPT"],
    "70bded7b3807c9a8",
    404,
    "-d 10.2.3.4/32 -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT",
    null,
  ],
  ["4", ["-s", "10.2.3.4/32", "-j", "ACCEPT"], "6b4161c6e048fcf9", 188, "-s 10.2.3.4/32 -j ACCEPT", null],
  [
    "4",
    ["-i", "cni0", "!", "-o", "cni0", "-m", "comment", "--comment", "iso", "-j", "DROP"],
    "61c68aa29544ca59",
    560,
    "-i cni0 ! -o cni0 -m comment --comment iso -j DROP",
    null,
  ],
  ["4", ["-o", "veth+", "-j", "RETURN"], "d7710ad4d395cca8", 172, "-o veth+ -j RETURN", null],
  [
    "4",
    ["-d", "10.2.3.0/24", "-j", "ACCEPT", "-m", "comment", "--comment", 'name: "bench" id: "c2"'],
    "80db0008427bb700",
    488,
    '-d 10.2.3.0/24 -m comment --comment "name: \\"bench\\" id: \\"c2\\"" -j ACCEPT',
    null,
  ],
  ["4", ["-d", "10.2.0.0/20", "-j", "ACCEPT"], "207985f3abc69169", 256, "-d 10.2.0.0/20 -j ACCEPT", null],
  [
    "4",
    ["!", "-d", "224.0.0.0/4", "-j", "MASQUERADE", "-m", "comment", "--comment", "x"],
    "9868a44f452298c6",
    580,
    "! -d 224.0.0.0/4 -m comment --comment x -j MASQUERADE",
    null,
  ],
  ["4", ["-s", "10.2.3.4", "-j", "CNI-n1"], "826787b4cedea62f", 200, "-s 10.2.3.4/32 -j CNI-n1", "CNI-n1"],
  [
    "4",
    ["-m", "conntrack", "--ctstate", "NEW,INVALID,UNTRACKED,SNAT,DNAT", "-g", "CNI-ISOLATION-STAGE-2"],
    "9264a415a0e17926",
    336,
    "-m conntrack --ctstate INVALID,NEW,UNTRACKED,SNAT,DNAT -g CNI-ISOLATION-STAGE-2",
    "CNI-ISOLATION-STAGE-2",
  ],
  [
    "4",
    ["-m", "comment", "--comment", "CNI portfwd masquerade mark", "-j", "MARK", "--set-xmark", "0x2000/0x2000"],
    "ffd9b4e81fbbeae9",
    396,
    '-m comment --comment "CNI portfwd masquerade mark" -j MARK --set-xmark 0x2000/0x2000',
    null,
  ],
  ["4", ["-m", "mark", "--mark", "0x2000/0x2000", "-j", "MASQUERADE"], "d75f6dbd8575dd44", 264, "-m mark --mark 0x2000/0x2000 -j MASQUERADE", null],
  ["4", ["-m", "mark", "--mark", "0x4", "-j", "ACCEPT"], "fd8aa6f5b428273b", 172, "-m mark --mark 0x4 -j ACCEPT", null],
  [
    "4",
    ["-m", "addrtype", "--dst-type", "LOCAL", "-j", "CNI-HOSTPORT-DNAT"],
    "c041eab37c9e0599",
    172,
    "-m addrtype --dst-type LOCAL -j CNI-HOSTPORT-DNAT",
    "CNI-HOSTPORT-DNAT",
  ],
  [
    "4",
    ["-m", "comment", "--comment", "c", "-m", "multiport", "-p", "tcp", "--destination-ports", "8080,90,65535", "-j", "CNI-DN-portmap"],
    "3e6e888e7bdda79e",
    588,
    "-p tcp -m comment --comment c -m multiport --dports 8080,90,65535 -j CNI-DN-portmap",
    "CNI-DN-portmap",
  ],
  [
    "4",
    ["-m", "multiport", "-p", "udp", "--dports", "53", "-j", "CNI-DN-portmap"],
    "e91075922246f835",
    288,
    "-p udp -m multiport --dports 53 -j CNI-DN-portmap",
    "CNI-DN-portmap",
  ],
  [
    "4",
    ["-m", "multiport", "-p", "sctp", "--destination-ports", "9", "-j", "CNI-DN-portmap"],
    "7edd6f3c2b1915bf",
    288,
    "-p sctp -m multiport --dports 9 -j CNI-DN-portmap",
    "CNI-DN-portmap",
  ],
  [
    "4",
    ["-p", "tcp", "--dport", "8080", "-s", "10.2.3.0/24", "-j", "CNI-HOSTPORT-SETMARK"],
    "2d6c792303ef58a2",
    392,
    "-s 10.2.3.0/24 -p tcp -m tcp --dport 8080 -j CNI-HOSTPORT-SETMARK",
    "CNI-HOSTPORT-SETMARK",
  ],
  [
    "4",
    ["-p", "tcp", "--dport", "8080", "-s", "0.0.0.0/0", "-j", "CNI-HOSTPORT-SETMARK"],
    "5178d63646dbd546",
    296,
    "-p tcp -m tcp --dport 8080 -j CNI-HOSTPORT-SETMARK",
    "CNI-HOSTPORT-SETMARK",
  ],
  [
    "4",
    ["-p", "tcp", "--dport", "8080", "-j", "DNAT", "--to-destination", "10.3.0.9:80"],
    "539309f67e199688",
    308,
    "-p tcp -m tcp --dport 8080 -j DNAT --to-destination 10.3.0.9:80",
    null,
  ],
  [
    "4",
    ["-p", "udp", "--dport", "53", "-d", "192.0.2.1", "-j", "DNAT", "--to-destination", "10.3.0.9:80"],
    "78cdd28f88ad91a7",
    404,
    "-d 192.0.2.1/32 -p udp -m udp --dport 53 -j DNAT --to-destination 10.3.0.9:80",
    null,
  ],
  [
    "4",
    ["-p", "sctp", "--dport", "9", "-j", "DNAT", "--to-destination", "10.3.0.9"],
    "aef3cd4411fcb9fb",
    552,
    "-p sctp -m sctp --dport 9 -j DNAT --to-destination 10.3.0.9",
    null,
  ],
  ["4", ["-p", "sctp", "-m", "sctp", "--dport", "9", "-j", "ACCEPT"], "90eb6e70ac96c064", 512, "-p sctp -m sctp --dport 9 -j ACCEPT", null],
  [
    "4",
    ["-p", "tcp", "-m", "tcp", "--dport", "1", "-m", "mark", "--mark", "0x4", "-j", "ACCEPT"],
    "67ea31397f2c3aa5",
    348,
    "-p tcp -m tcp --dport 1 -m mark --mark 0x4 -j ACCEPT",
    null,
  ],
  ["4", ["-p", "udp", "-j", "DROP"], "b4d14420ffd6234f", 172, "-p udp -j DROP", null],
  ["4", ["-i", "eth+", "!", "-s", "10.2.3.0/24", "-j", "ACCEPT"], "451f797f58a2b424", 268, "! -s 10.2.3.0/24 -i eth+ -j ACCEPT", null],
  ["4", ["-j", "CNI-abc"], "fb43ec2e3ea500eb", 104, "-j CNI-abc", "CNI-abc"],
  ["4", [], "bb398ea9c56dd970", 44, "", null],
  [
    "6",
    ["-m", "comment", "--comment", "CNI firewall plugin rules", "-j", "CNI-FORWARD"],
    "acac318fd7d8d472",
    408,
    '-m comment --comment "CNI firewall plugin rules" -j CNI-FORWARD',
    "CNI-FORWARD",
  ],
  [
    "6",
    ["-d", "fd00:2::7/128", "-m", "conntrack", "--ctstate", "RELATED,ESTABLISHED", "-j", "ACCEPT"],
    "487597d1e86ec2ca",
    416,
    "-d fd00:2::7/128 -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT",
    null,
  ],
  ["6", ["-s", "fd00:2::7/128", "-j", "ACCEPT"], "2c626698ce45f44a", 200, "-s fd00:2::7/128 -j ACCEPT", null],
  [
    "6",
    ["-i", "cni0", "!", "-o", "cni0", "-m", "comment", "--comment", "iso", "-j", "DROP"],
    "61c68aa29544ca59",
    560,
    "-i cni0 ! -o cni0 -m comment --comment iso -j DROP",
    null,
  ],
  ["6", ["-o", "veth+", "-j", "RETURN"], "d7710ad4d395cca8", 172, "-o veth+ -j RETURN", null],
  [
    "6",
    ["-d", "fd00:2::/64", "-j", "ACCEPT", "-m", "comment", "--comment", 'name: "bench" id: "c2"'],
    "f6b84fd907f58b06",
    492,
    '-d fd00:2::/64 -m comment --comment "name: \\"bench\\" id: \\"c2\\"" -j ACCEPT',
    null,
  ],
  ["6", ["-d", "fd00:2::/60", "-j", "ACCEPT"], "11a89ef01490d26b", 292, "-d fd00:2::/60 -j ACCEPT", null],
  [
    "6",
    ["!", "-d", "ff00::/8", "-j", "MASQUERADE", "-m", "comment", "--comment", "x"],
    "c7f88c7a7a56e292",
    528,
    "! -d ff00::/8 -m comment --comment x -j MASQUERADE",
    null,
  ],
  ["6", ["-s", "fd00:2::7", "-j", "CNI-n1"], "b08b394bb6eec465", 212, "-s fd00:2::7/128 -j CNI-n1", "CNI-n1"],
  [
    "6",
    ["-m", "conntrack", "--ctstate", "NEW,INVALID,UNTRACKED,SNAT,DNAT", "-g", "CNI-ISOLATION-STAGE-2"],
    "9264a415a0e17926",
    336,
    "-m conntrack --ctstate INVALID,NEW,UNTRACKED,SNAT,DNAT -g CNI-ISOLATION-STAGE-2",
    "CNI-ISOLATION-STAGE-2",
  ],
  [
    "6",
    ["-m", "comment", "--comment", "CNI portfwd masquerade mark", "-j", "MARK", "--set-xmark", "0x2000/0x2000"],
    "ffd9b4e81fbbeae9",
    396,
    '-m comment --comment "CNI portfwd masquerade mark" -j MARK --set-xmark 0x2000/0x2000',
    null,
  ],
  ["6", ["-m", "mark", "--mark", "0x2000/0x2000", "-j", "MASQUERADE"], "a9d867e67b5948ed", 280, "-m mark --mark 0x2000/0x2000 -j MASQUERADE", null],
  ["6", ["-m", "mark", "--mark", "0x4", "-j", "ACCEPT"], "fd8aa6f5b428273b", 172, "-m mark --mark 0x4 -j ACCEPT", null],
  [
    "6",
    ["-m", "addrtype", "--dst-type", "LOCAL", "-j", "CNI-HOSTPORT-DNAT"],
    "c041eab37c9e0599",
    172,
    "-m addrtype --dst-type LOCAL -j CNI-HOSTPORT-DNAT",
    "CNI-HOSTPORT-DNAT",
  ],
  [
    "6",
    ["-m", "comment", "--comment", "c", "-m", "multiport", "-p", "tcp", "--destination-ports", "8080,90,65535", "-j", "CNI-DN-portmap"],
    "3e6e888e7bdda79e",
    588,
    "-p tcp -m comment --comment c -m multiport --dports 8080,90,65535 -j CNI-DN-portmap",
    "CNI-DN-portmap",
  ],
  [
    "6",
    ["-m", "multiport", "-p", "udp", "--dports", "53", "-j", "CNI-DN-portmap"],
    "e91075922246f835",
    288,
    "-p udp -m multiport --dports 53 -j CNI-DN-portmap",
    "CNI-DN-portmap",
  ],
  [
    "6",
    ["-m", "multiport", "-p", "sctp", "--destination-ports", "9", "-j", "CNI-DN-portmap"],
    "7edd6f3c2b1915bf",
    288,
    "-p sctp -m multiport --dports 9 -j CNI-DN-portmap",
    "CNI-DN-portmap",
  ],
  [
    "6",
    ["-p", "tcp", "--dport", "8080", "-s", "fd00:2::/64", "-j", "CNI-HOSTPORT-SETMARK"],
    "58ee3647bdafa744",
    396,
    "-s fd00:2::/64 -p tcp -m tcp --dport 8080 -j CNI-HOSTPORT-SETMARK",
    "CNI-HOSTPORT-SETMARK",
  ],
  [
    "6",
    ["-p", "tcp", "--dport", "8080", "-s", "::/0", "-j", "CNI-HOSTPORT-SETMARK"],
    "5178d63646dbd546",
    296,
    "-p tcp -m tcp --dport 8080 -j CNI-HOSTPORT-SETMARK",
    "CNI-HOSTPORT-SETMARK",
  ],
  [
    "6",
    ["-p", "tcp", "--dport", "8080", "-j", "DNAT", "--to-destination", "[fd00:3::9]:80"],
    "8dbca7c10ae37967",
    308,
    "-p tcp -m tcp --dport 8080 -j DNAT --to-destination [fd00:3::9]:80",
    null,
  ],
  [
    "6",
    ["-p", "udp", "--dport", "53", "-d", "fd00:9::1", "-j", "DNAT", "--to-destination", "[fd00:3::9]:80"],
    "ace19c0d2f94d2cf",
    416,
    "-d fd00:9::1/128 -p udp -m udp --dport 53 -j DNAT --to-destination [fd00:3::9]:80",
    null,
  ],
  [
    "6",
    ["-p", "sctp", "--dport", "9", "-j", "DNAT", "--to-destination", "fd00:3::9"],
    "16e7387919149ee9",
    552,
    "-p sctp -m sctp --dport 9 -j DNAT --to-destination fd00:3::9",
    null,
  ],
  ["6", ["-p", "sctp", "-m", "sctp", "--dport", "9", "-j", "ACCEPT"], "90eb6e70ac96c064", 512, "-p sctp -m sctp --dport 9 -j ACCEPT", null],
  [
    "6",
    ["-p", "tcp", "-m", "tcp", "--dport", "1", "-m", "mark", "--mark", "0x4", "-j", "ACCEPT"],
    "67ea31397f2c3aa5",
    348,
    "-p tcp -m tcp --dport 1 -m mark --mark 0x4 -j ACCEPT",
    null,
  ],
  ["6", ["-p", "udp", "-j", "DROP"], "b4d14420ffd6234f", 172, "-p udp -j DROP", null],
  ["6", ["-i", "eth+", "!", "-s", "fd00:2::/64", "-j", "ACCEPT"], "ec3e902c59d22f8b", 272, "! -s fd00:2::/64 -i eth+ -j ACCEPT", null],
  ["6", ["-j", "CNI-abc"], "fb43ec2e3ea500eb", 104, "-j CNI-abc", "CNI-abc"],
  ["6", [], "bb398ea9c56dd970", 44, "", null],
];

/** Family and words the encoder leaves to iptables-restore. */
const REFUSED: ReadonlyArray<readonly [family: "4" | "6", args: readonly string[]]> = [
  // Names an object has by inheritance are no verdict, protocol or extension.
  ["4", ["-j", "constructor"]],
  ["4", ["-p", "toString", "-j", "ACCEPT"]],
  ["4", ["-m", "hasOwnProperty", "-j", "ACCEPT"]],
  ["4", ["!", "-p", "tcp", "-j", "ACCEPT"]],
  ["4", ["-p", "icmp", "-j", "ACCEPT"]],
  ["4", ["-m", "comment", "-j", "ACCEPT"]],
  ["4", ["-m", "addrtype", "--dst-type", "UNICAST", "-j", "ACCEPT"]],
  ["4", ["-j", "MARK"]],
  ["4", ["-j", "LOG"]],
  ["4", ["-m", "multiport", "-j", "ACCEPT"]],
  ["4", ["-m", "tcp", "--dport", "1", "-j", "ACCEPT"]],
  ["4", ["-p", "tcp", "--dport", "70000", "-j", "ACCEPT"]],
  ["4", ["-s", "fd00::1", "-j", "ACCEPT"]],
  ["4", ["!", "-s", "0.0.0.0/0", "-j", "ACCEPT"]],
  ["4", ["-j", "DNAT", "--to-destination", "fd00::1"]],
  ["4", ["-m", "conntrack", "--ctstate", "BOGUS", "-j", "ACCEPT"]],
  ["6", ["!", "-p", "tcp", "-j", "ACCEPT"]],
  ["6", ["-p", "icmp", "-j", "ACCEPT"]],
  ["6", ["-m", "comment", "-j", "ACCEPT"]],
  ["6", ["-m", "addrtype", "--dst-type", "UNICAST", "-j", "ACCEPT"]],
  ["6", ["-j", "MARK"]],
  ["6", ["-j", "LOG"]],
  ["6", ["-m", "multiport", "-j", "ACCEPT"]],
  ["6", ["-m", "tcp", "--dport", "1", "-j", "ACCEPT"]],
  ["6", ["-p", "tcp", "--dport", "70000", "-j", "ACCEPT"]],
  ["6", ["-s", "10.0.0.1", "-j", "ACCEPT"]],
  ["6", ["!", "-s", "::/0", "-j", "ACCEPT"]],
  ["6", ["-j", "DNAT", "--to-destination", "10.0.0.1"]],
  ["6", ["-m", "conntrack", "--ctstate", "BOGUS", "-j", "ACCEPT"]],
];

test("each shape the plugins write encodes to iptables-nft's bytes and renders as iptables -S prints it", () => {
  for (const [family, args, digest, length, rendered, jump] of ENCODED) {
    const bytes = encodeRule(familyOf(family), args);
    assert.ok(bytes, `${family} ${args.join(" ")}`);
    assert.deepEqual(
      [createHash("sha256").update(bytes).digest("hex").slice(0, 16), bytes.length],
      [digest, length],
      `bytes of ${family} ${args.join(" ")}`,
    );
    assert.equal(renderRule(familyOf(family), bytes)?.join(" "), rendered, `rendering of ${family} ${args.join(" ")}`);
    assert.equal(ruleJump(bytes) ?? null, jump);
  }
});

test("words outside the vocabulary encode to nothing", () => {
  for (const [family, args] of REFUSED) assert.equal(encodeRule(familyOf(family), args), undefined, `${family} ${args.join(" ")}`);
});

test("a rule with no expressions renders as no words; a foreign expression as nothing", () => {
  assert.deepEqual(renderRule(NFPROTO_IPV4, undefined), []);
  const foreign = encodeRule(NFPROTO_IPV4, ["-j", "ACCEPT"])!.slice();
  // The first expression's name, "counter", made "counteR": a kind this does not read.
  const at = Buffer.from(foreign).indexOf("counter");
  foreign[at + 6] = "R".charCodeAt(0);
  assert.equal(renderRule(NFPROTO_IPV4, foreign), undefined);
});
