#!/usr/bin/env bash
# Prepares a fresh Debian machine (as root) for everything tscni does and tests, and builds it: system tools (iproute2, iptables, nftables,
# and Debian's Go CNI plugins, the reference the interop tests compare against; podman and containerd for the
# drop-in tests, buildah for the installer image), npm dependencies, dist/.
set -euo pipefail
cd "$(dirname "$0")/.."

need=()
command -v ip >/dev/null 2>&1 || need+=(iproute2)
command -v iptables >/dev/null 2>&1 || need+=(iptables)
command -v nft >/dev/null 2>&1 || need+=(nftables)
[ -x /usr/lib/cni/bridge ] || need+=(containernetworking-plugins)
# Go's dnsname (containers/dnsname 1.3.1), the reference the dnsname differential and mixed-network tests compare against.
[ -x /usr/lib/cni/dnsname ] || need+=(golang-github-containernetworking-plugin-dnsname)
command -v ping >/dev/null 2>&1 || need+=(iputils-ping)
command -v nsenter >/dev/null 2>&1 || need+=(util-linux)
command -v conntrack >/dev/null 2>&1 || need+=(conntrack)
# dnsmasq serves DHCP to the dhcp plugin's tests inside a test namespace, and is the DNS server the dnsname plugin
# runs per network; dnsmasq-base is the binary alone,
# without the dnsmasq package's system service (nothing starts or listens on the host).
command -v dnsmasq >/dev/null 2>&1 || [ -x /usr/sbin/dnsmasq ] || need+=(dnsmasq-base)
[ -x /usr/bin/time ] || need+=(time)
# (the launcher test makes memfd_create fail with strace's fault injection)
command -v strace >/dev/null 2>&1 || need+=(strace)
# podman with the CNI backend: the drop-in test points a real runtime at our plugin directory.
command -v podman >/dev/null 2>&1 || need+=(podman conmon golang-github-containers-common)
command -v runc >/dev/null 2>&1 || need+=(runc)
# buildah makes the installer image from the release's tarballs (scripts/image.mjs); the image test runs it with podman.
command -v buildah >/dev/null 2>&1 || need+=(buildah)
[ -x /bin/busybox ] || need+=(busybox-static)
# containerd: the CRI end-to-end test (kubelet's path) runs a private containerd with our plugin directory
# (its sandbox image's pause program is built with gcc -static, when gcc and libc6-dev are there).
command -v containerd >/dev/null 2>&1 || need+=(containerd)
command -v gcc >/dev/null 2>&1 || need+=(gcc)
[ -f /usr/lib/x86_64-linux-gnu/libc.a ] || [ -f /usr/lib/aarch64-linux-gnu/libc.a ] || need+=(libc6-dev)
# The release builds linux/arm64 too (docs/release.md): Debian's cross compiler for the launcher (its no-libc
# build wants only the kernel's arm64 headers), and qemu-user to run what it built, as the build checks its launcher
# and the release tests run every arm64 artifact (the arm64 C library that comes with the cross compiler is the
# one Bun's arm64 runtime is loaded with, QEMU_LD_PREFIX=/usr/aarch64-linux-gnu).
command -v aarch64-linux-gnu-gcc >/dev/null 2>&1 || need+=(gcc-aarch64-linux-gnu)
[ -f /usr/aarch64-linux-gnu/include/asm/unistd.h ] || need+=(linux-libc-dev-arm64-cross)
[ -f /usr/aarch64-linux-gnu/lib/ld-linux-aarch64.so.1 ] || need+=(libc6-arm64-cross)
command -v qemu-aarch64-static >/dev/null 2>&1 || need+=(qemu-user-static)
# etcd: cluster-ipam's tests, demo (--cluster) and benchmark run their own local etcd members (and openssl makes
# the TLS test's certificates). The package's own service must not start: see below.
command -v etcd >/dev/null 2>&1 || need+=(etcd-server)
command -v etcdctl >/dev/null 2>&1 || need+=(etcd-client)
command -v openssl >/dev/null 2>&1 || need+=(openssl)
# The docs' config snippets are parsed by the tests: TOML with Python's tomllib (3.11), YAML with python3-yaml.
python3 -c 'import tomllib, yaml' >/dev/null 2>&1 || need+=(python3 python3-yaml)
# systemd's tools check the resident server's units (systemd-analyze verify) and hand it a listening socket the
# way the socket unit does (systemd-socket-activate); systemd need not be the init system.
command -v systemd-socket-activate >/dev/null 2>&1 || need+=(systemd)
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "setup: missing ${need[*]}; run as root (or install them) first" >&2
    exit 1
  fi
  echo "setup: installing ${need[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  # etcd-server's postinst starts an etcd on the default ports through invoke-rc.d; a policy-rc.d that denies
  # every start keeps it (and any other package's service) from running. Ours is removed again; one already
  # present (containers often have one) is left alone.
  policy_added=""
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d && chmod 755 /usr/sbin/policy-rc.d && policy_added=1
  fi
  installed=0
  apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null || installed=$?
  if [ -n "$policy_added" ]; then rm -f /usr/sbin/policy-rc.d; fi
  if [ "$installed" -ne 0 ]; then exit "$installed"; fi
  # Belt and braces: if the package's service runs anyway (a systemd host), stop it; tests start their own members.
  if [[ " ${need[*]} " == *" etcd-server "* ]]; then
    if [ -d /run/systemd/system ]; then systemctl disable --now etcd >/dev/null 2>&1 || true
    elif [ -x /etc/init.d/etcd ]; then /etc/init.d/etcd stop >/dev/null 2>&1 || true
    fi
  fi
fi

# qemu-user-static's binfmt_misc entry (argv[0] preserved, the interpreter opened once: it works in every
# namespace), so an arm64 program runs here as if native: the launcher execs the program beside it, which qemu-user
# alone cannot follow. systemd registers it at boot; where systemd is not the init system (containers, CI), here.
if [ "$(uname -m)" = x86_64 ] && [ "$(id -u)" -eq 0 ] && [ -f /usr/lib/binfmt.d/qemu-aarch64.conf ] && [ ! -e /proc/sys/fs/binfmt_misc/qemu-aarch64 ]; then
  [ -e /proc/sys/fs/binfmt_misc/register ] || mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc || true
  /lib/systemd/systemd-binfmt /usr/lib/binfmt.d/qemu-aarch64.conf || echo "setup: could not register qemu-aarch64 with binfmt_misc" >&2
fi

if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  npm ci --no-audit --no-fund --loglevel=error
fi
npm run --silent build
