/*
 * The kernel's floor for the bare chain's burst (bench/pods.mjs, chain "bare"): what bridge + host-local + tuning
 * ask of the kernel for N pods, done by one process over rtnetlink with no plugin, so that every burst figure can be
 * printed beside it. Setup: the bridge (up, its gateway address) and IPv4 forwarding once; then per pod, one after
 * another: a veth pair made with its container end in the pod's namespace (eth0) and its host end on the bridge,
 * up, hairpin on; in the pod's namespace: eth0 up, its address, the default route via the gateway, and a sysctl
 * (arp_notify). Teardown by the fastest means the kernel offers: the host ends were made in one device group, and
 * one RTM_DELLINK for the group deletes every pair (the namespaces are deleted afterwards by the caller, untimed,
 * as the pod driver deletes them after its teardown). No IPAM files, no result cache: only the kernel's part.
 *
 * usage: floor N NS_PREFIX BRIDGE SUBNET_PREFIX [--keep]
 *   the namespaces /run/netns/<NS_PREFIX><i> (i < N) exist; SUBNET_PREFIX "10.241." gives 10.241.0.1/16 to the
 *   bridge and 10.241.<i/250>.<i%250+2>/16 to pod i. --keep: no teardown (to look at what setup made).
 * prints one JSON line: {"setupMs":…,"teardownMs":…}
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/if_link.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/veth.h>
#include <net/if.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define GROUP 0x2bf1007

struct req {
  struct nlmsghdr h;
  char body[4096];
};

static int seq;

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static void die(const char *what) {
  perror(what);
  exit(1);
}

static void *tail(struct req *r) {
  return (char *)r + NLMSG_ALIGN(r->h.nlmsg_len);
}

static struct rtattr *put(struct req *r, int type, const void *data, int len) {
  struct rtattr *a = tail(r);
  a->rta_type = (unsigned short)type;
  a->rta_len = (unsigned short)RTA_LENGTH(len);
  if (len) memcpy(RTA_DATA(a), data, (size_t)len);
  r->h.nlmsg_len = NLMSG_ALIGN(r->h.nlmsg_len) + RTA_ALIGN(a->rta_len);
  return a;
}

static struct rtattr *nest(struct req *r, int type) {
  return put(r, type | NLA_F_NESTED, NULL, 0);
}

static void end_nest(struct req *r, struct rtattr *a) {
  a->rta_len = (unsigned short)((char *)tail(r) - (char *)a);
}

static void start(struct req *r, int type, int flags, const void *header, int len) {
  memset(r, 0, sizeof(*r));
  r->h.nlmsg_type = (unsigned short)type;
  r->h.nlmsg_flags = (unsigned short)(NLM_F_REQUEST | NLM_F_ACK | flags);
  r->h.nlmsg_seq = (unsigned)++seq;
  r->h.nlmsg_len = NLMSG_LENGTH(len);
  memcpy(NLMSG_DATA(&r->h), header, (size_t)len);
}

/* Sends `r` on `fd` and waits for its ACK; exits on an error the kernel reports. */
static void talk(int fd, struct req *r, const char *what) {
  if (send(fd, r, r->h.nlmsg_len, 0) < 0) die(what);
  char buf[8192];
  for (;;) {
    ssize_t n = recv(fd, buf, sizeof(buf), 0);
    if (n < 0) die(what);
    for (struct nlmsghdr *h = (void *)buf; NLMSG_OK(h, n); h = NLMSG_NEXT(h, n)) {
      if (h->nlmsg_type != NLMSG_ERROR) continue;
      struct nlmsgerr *e = NLMSG_DATA(h);
      if (e->error) {
        fprintf(stderr, "floor: %s: %s\n", what, strerror(-e->error));
        exit(1);
      }
      return;
    }
  }
}

static int rtnl(void) {
  int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
  if (fd < 0) die("socket");
  return fd;
}

static void write_text(const char *path, const char *value) {
  int fd = open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0 || write(fd, value, strlen(value)) < 0) die(path);
  close(fd);
}

static void link_up(int fd, int index, const char *what) {
  struct ifinfomsg ifi = {.ifi_family = AF_UNSPEC, .ifi_index = index, .ifi_flags = IFF_UP, .ifi_change = IFF_UP};
  struct req r;
  start(&r, RTM_NEWLINK, 0, &ifi, sizeof(ifi));
  talk(fd, &r, what);
}

static void add_address(int fd, int index, const char *ip, int prefix, const char *what) {
  struct ifaddrmsg ifa = {.ifa_family = AF_INET, .ifa_prefixlen = (unsigned char)prefix, .ifa_index = (unsigned)index};
  struct req r;
  struct in_addr a;
  inet_pton(AF_INET, ip, &a);
  start(&r, RTM_NEWADDR, NLM_F_CREATE | NLM_F_EXCL, &ifa, sizeof(ifa));
  put(&r, IFA_LOCAL, &a, 4);
  put(&r, IFA_ADDRESS, &a, 4);
  talk(fd, &r, what);
}

int main(int argc, char **argv) {
  if (argc != 5 && !(argc == 6 && !strcmp(argv[5], "--keep"))) {
    fprintf(stderr, "usage: floor N NS_PREFIX BRIDGE SUBNET_PREFIX [--keep]\n");
    return 2;
  }
  int pods = atoi(argv[1]);
  const char *prefix = argv[2], *bridge = argv[3], *subnet = argv[4];
  int host_ns = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
  int host = rtnl();
  char gateway[32], path[256], name[IFNAMSIZ], ip[32];
  snprintf(gateway, sizeof(gateway), "%s0.1", subnet);

  double t0 = now_ms();
  /* the bridge, as the first ADD makes it */
  struct ifinfomsg ifi = {.ifi_family = AF_UNSPEC};
  struct req r;
  start(&r, RTM_NEWLINK, NLM_F_CREATE | NLM_F_EXCL, &ifi, sizeof(ifi));
  put(&r, IFLA_IFNAME, bridge, (int)strlen(bridge) + 1);
  struct rtattr *info = nest(&r, IFLA_LINKINFO);
  put(&r, IFLA_INFO_KIND, "bridge", 7);
  end_nest(&r, info);
  talk(host, &r, "bridge");
  int bridge_index = (int)if_nametoindex(bridge);
  link_up(host, bridge_index, "bridge up");
  add_address(host, bridge_index, gateway, 16, "bridge address");
  write_text("/proc/sys/net/ipv4/ip_forward", "1");

  for (int i = 0; i < pods; i++) {
    snprintf(path, sizeof(path), "/run/netns/%s%d", prefix, i);
    int ns = open(path, O_RDONLY | O_CLOEXEC);
    if (ns < 0) die(path);
    snprintf(name, sizeof(name), "fl%x", i);
    /* the pair: host end on the bridge, up, in the group; container end eth0 in the pod's namespace */
    struct ifinfomsg host_end = {.ifi_family = AF_UNSPEC, .ifi_flags = IFF_UP, .ifi_change = IFF_UP};
    start(&r, RTM_NEWLINK, NLM_F_CREATE | NLM_F_EXCL, &host_end, sizeof(host_end));
    put(&r, IFLA_IFNAME, name, (int)strlen(name) + 1);
    put(&r, IFLA_MASTER, &bridge_index, 4);
    unsigned group = GROUP;
    put(&r, IFLA_GROUP, &group, 4);
    info = nest(&r, IFLA_LINKINFO);
    put(&r, IFLA_INFO_KIND, "veth", 5);
    struct rtattr *data = nest(&r, IFLA_INFO_DATA);
    struct rtattr *peer = put(&r, VETH_INFO_PEER, &(struct ifinfomsg){.ifi_family = AF_UNSPEC}, sizeof(struct ifinfomsg));
    put(&r, IFLA_IFNAME, "eth0", 5);
    put(&r, IFLA_NET_NS_FD, &ns, 4);
    end_nest(&r, peer);
    end_nest(&r, data);
    end_nest(&r, info);
    talk(host, &r, "veth");
    /* hairpin on the bridge port */
    struct ifinfomsg port = {.ifi_family = AF_BRIDGE, .ifi_index = (int)if_nametoindex(name)};
    start(&r, RTM_SETLINK, 0, &port, sizeof(port));
    struct rtattr *protinfo = nest(&r, IFLA_PROTINFO);
    unsigned char on = 1;
    put(&r, IFLA_BRPORT_MODE, &on, 1);
    end_nest(&r, protinfo);
    talk(host, &r, "hairpin");
    /* in the pod's namespace */
    if (setns(ns, CLONE_NEWNET) != 0) die("setns");
    int pod = rtnl();
    int eth0 = (int)if_nametoindex("eth0");
    link_up(pod, eth0, "eth0 up");
    snprintf(ip, sizeof(ip), "%s%d.%d", subnet, i / 250, i % 250 + 2);
    add_address(pod, eth0, ip, 16, "eth0 address");
    struct rtmsg rt = {.rtm_family = AF_INET, .rtm_table = RT_TABLE_MAIN, .rtm_protocol = RTPROT_BOOT, .rtm_scope = RT_SCOPE_UNIVERSE, .rtm_type = RTN_UNICAST};
    start(&r, RTM_NEWROUTE, NLM_F_CREATE | NLM_F_EXCL, &rt, sizeof(rt));
    struct in_addr gw;
    inet_pton(AF_INET, gateway, &gw);
    put(&r, RTA_GATEWAY, &gw, 4);
    put(&r, RTA_OIF, &eth0, 4);
    talk(pod, &r, "default route");
    write_text("/proc/sys/net/ipv4/conf/eth0/arp_notify", "1");
    close(pod);
    if (setns(host_ns, CLONE_NEWNET) != 0) die("setns back");
    close(ns);
  }
  double t1 = now_ms();
  if (argc == 6) {
    printf("{\"setupMs\":%.1f}\n", t1 - t0);
    return 0;
  }

  /* every pair at once: one RTM_DELLINK for the group of their host ends */
  struct ifinfomsg all = {.ifi_family = AF_UNSPEC};
  start(&r, RTM_DELLINK, 0, &all, sizeof(all));
  unsigned group = GROUP;
  put(&r, IFLA_GROUP, &group, 4);
  talk(host, &r, "delete the group");
  double t2 = now_ms();
  printf("{\"setupMs\":%.1f,\"teardownMs\":%.1f}\n", t1 - t0, t2 - t1);
  return 0;
}
