#!/usr/bin/env bash
# Prints the route-netlink request an `ip` command (or with CAPTURE_TOOL=tc, a `tc` command) sends, as the hex
# words the unit tests keep as vectors (src/net/netlink/rtnetlink-messages.test.ts, src/net/link/tc.test.ts): the whole last
# message the tool sent on its rtnetlink socket (header included; the tests compare type, flags and the body
# after the 16-byte header). The kernel may refuse the request (a link type this kernel lacks): it has been sent
# all the same, which is what is captured.
#
#   scripts/capture-rtnetlink.sh <netns> link add link vp0 name veth0 type vlan id 100
#   CAPTURE_TOOL=tc scripts/capture-rtnetlink.sh <netns> qdisc add dev veth0 handle ffff: ingress
#
# Runs the tool under strace in the given namespace (as root); needs strace.
set -euo pipefail
ns=$1
shift
tool=${CAPTURE_TOOL:-ip}
out=$(ip netns exec "$ns" strace -f -e trace=sendmsg -e write=3 -xx "$tool" "$@" 2>&1 >/dev/null || true)
# strace dumps every buffer written to fd 3 (the tool's rtnetlink socket) as " | 00000  74 00 ... |" lines after
# " * N bytes in buffer 0"; keep the last dump.
printf '%s\n' "$out" | perl -ne '
  if (/bytes in buffer 0/) { @dump = (); next }
  if (/^ \| [0-9a-f]{5}  /) { push @dump, split(" ", substr($_, 10, 49)) }
  END { print join(" ", @dump), "\n" }'
printf '%s\n' "$out" | grep -v '^sendmsg\|^ \*\|^ |\|^+++' >&2 || true
