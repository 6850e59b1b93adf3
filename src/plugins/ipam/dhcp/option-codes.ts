/**
 * DHCP option and message codes, and the option names and lists the config uses: apart from the packet codec
 * (packet.ts) and the result builder (options.ts), so a plugin call that parses its config loads neither.
 * @module
 */

/** DHCP message types (option 53). */
export const MessageType = {
  Discover: 1,
  Offer: 2,
  Request: 3,
  Decline: 4,
  Ack: 5,
  Nak: 6,
  Release: 7,
  Inform: 8,
} as const;

/** The option codes this client reads or writes. */
export const Option = {
  Pad: 0,
  SubnetMask: 1,
  Router: 3,
  DomainNameServer: 6,
  HostName: 12,
  DomainName: 15,
  StaticRoutes: 33,
  RequestedIP: 50,
  LeaseTime: 51,
  Overload: 52,
  MessageType: 53,
  ServerID: 54,
  ParameterRequestList: 55,
  Message: 56,
  MaxMessageSize: 57,
  RenewalTime: 58,
  RebindingTime: 59,
  VendorClassID: 60,
  ClientID: 61,
  UserClass: 77,
  DomainSearch: 119,
  ClasslessStaticRoutes: 121,
  End: 255,
} as const;

/** The option names the config accepts (upstream's list); any other option is given by its number. */
export const OPTION_NAMES: Readonly<Record<string, number>> = {
  "dhcp-client-identifier": Option.ClientID,
  "subnet-mask": Option.SubnetMask,
  routers: Option.Router,
  "host-name": Option.HostName,
  "user-class": Option.UserClass,
  "vendor-class-identifier": Option.VendorClassID,
};

/** An option code from its name or its decimal number (0-255, as Go's strconv.ParseUint(s, 10, 8)). */
export function parseOptionName(text: string): number | undefined {
  const named = Object.hasOwn(OPTION_NAMES, text) ? OPTION_NAMES[text] : undefined;
  if (named !== undefined) return named;
  if (!/^[0-9]+$/.test(text)) return undefined;
  const n = Number(text);
  return n <= 255 ? n : undefined;
}

/**
 * The parameter request list unless a `request` entry says `skipDefault`: subnet mask and router (upstream's
 * two), plus DNS servers, domain name, domain search and classless static routes, so the result can carry
 * them (a server sends option 121 only to clients that ask for it, RFC 3442).
 */
export const DEFAULT_REQUESTED: readonly number[] = [
  Option.SubnetMask,
  Option.Router,
  Option.DomainNameServer,
  Option.DomainName,
  Option.DomainSearch,
  Option.ClasslessStaticRoutes,
];

/**
 * Options the client sets itself in each message, so `provide` cannot: pad and end, requested address,
 * overload, message type, server identifier, parameter request list, maximum message size.
 */
export const CLIENT_MANAGED: ReadonlySet<number> = new Set([
  Option.Pad,
  Option.RequestedIP,
  Option.Overload,
  Option.MessageType,
  Option.ServerID,
  Option.ParameterRequestList,
  Option.MaxMessageSize,
  Option.End,
]);
