/**
 * Every plugin of the house, by its manifest (plugins/manifest.ts), in the order the catalog lists them. Adding a
 * plugin: its folder with a `manifest.ts`, and one line here.
 * @module
 */

import { manifest as clusterIpam } from "./ipam/cluster-ipam/manifest.js";
import { manifest as dhcp } from "./ipam/dhcp/manifest.js";
import { manifest as hostLocal } from "./ipam/host-local/manifest.js";
import { manifest as staticIpam } from "./ipam/static/manifest.js";
import { manifest as bridge } from "./main/bridge/manifest.js";
import { manifest as dummy } from "./main/dummy/manifest.js";
import { manifest as hostDevice } from "./main/host-device/manifest.js";
import { manifest as ipvlan } from "./main/ipvlan/manifest.js";
import { manifest as loopback } from "./main/loopback/manifest.js";
import { manifest as macvlan } from "./main/macvlan/manifest.js";
import { manifest as ptp } from "./main/ptp/manifest.js";
import { manifest as tap } from "./main/tap/manifest.js";
import { manifest as vlan } from "./main/vlan/manifest.js";
import type { PluginManifest } from "./manifest.js";
import { manifest as bandwidth } from "./meta/bandwidth/manifest.js";
import { manifest as dnsname } from "./meta/dnsname/manifest.js";
import { manifest as firewall } from "./meta/firewall/manifest.js";
import { manifest as flannel } from "./meta/flannel/manifest.js";
import { manifest as mptcp } from "./meta/mptcp/manifest.js";
import { manifest as portmap } from "./meta/portmap/manifest.js";
import { manifest as sbr } from "./meta/sbr/manifest.js";
import { manifest as tuning } from "./meta/tuning/manifest.js";
import { manifest as vrf } from "./meta/vrf/manifest.js";

export const MANIFESTS: readonly PluginManifest[] = [
  hostLocal,
  staticIpam,
  dhcp,
  loopback,
  bridge,
  ptp,
  portmap,
  tuning,
  bandwidth,
  firewall,
  sbr,
  vrf,
  mptcp,
  macvlan,
  ipvlan,
  vlan,
  dummy,
  tap,
  hostDevice,
  flannel,
  clusterIpam,
  dnsname,
];
