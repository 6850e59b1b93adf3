/**
 * Generic netlink (NETLINK_GENERIC): a socket in a network namespace bound to one family, its id resolved by name
 * through the controller, and the framing of its requests (struct genlmsghdr, then attributes). Formats are the
 * kernel's (include/uapi/linux/genetlink.h). Like rtnetlink.ts it exists only under the standalone (Bun) build.
 * @module
 */
import { concatBytes } from "#sys/bytes.js";
import { NetOpError } from "../errors.js";
import { type Exchange, errnoText, type NlMessage, nlString, openNetlink, parseAttrs, type RtnetlinkSocket } from "./rtnetlink.js";

const NETLINK_GENERIC = 16;
const GENL_ID_CTRL = 0x10;
const CTRL_CMD_GETFAMILY = 3;
const CTRL_ATTR_FAMILY_ID = 1;
const CTRL_ATTR_FAMILY_NAME = 2;
const ENOENT = 2;

/** A generic netlink family, reached through a socket in one namespace. */
export interface GenlFamily {
  /** Sends command `cmd` with `attrs` and collects the answer (see RtnetlinkSocket.exchange). */
  exchange(cmd: number, flags: number, attrs: readonly Uint8Array[], operation: string): Exchange;
  close(): void;
}

/** The attributes of a family's message (after its genlmsghdr). */
export const genlAttrs = (m: NlMessage): Map<number, Uint8Array> => parseAttrs(m.payload.subarray(4));

const genlBody = (cmd: number, version: number, attrs: readonly Uint8Array[]) => concatBytes(Uint8Array.of(cmd, version, 0, 0), ...attrs);

/**
 * Opens family `name` (protocol version `version`) in the namespace at `netnsPath` (this process's own when
 * undefined). Null when this runtime has no netlink socket (the Node build); "absent" when the kernel has no such
 * family (the module that provides it is not built in or not loaded).
 */
export async function openGenlFamily(name: string, version: number, netnsPath?: string): Promise<GenlFamily | "absent" | null> {
  const socket = await openNetlink(NETLINK_GENERIC, netnsPath);
  if (!socket) return null;
  try {
    const id = resolveFamily(socket, name);
    if (id === undefined) {
      socket.close();
      return "absent";
    }
    return {
      exchange: (cmd, flags, attrs, operation) => socket.exchange(id, flags, genlBody(cmd, version, attrs), operation),
      close: () => socket.close(),
    };
  } catch (e) {
    socket.close();
    throw e;
  }
}

/** The family's id, as the controller answers CTRL_CMD_GETFAMILY; undefined when there is no such family. */
function resolveFamily(socket: RtnetlinkSocket, name: string): number | undefined {
  const operation = `look up generic netlink family ${name}`;
  const reply = socket.exchange(GENL_ID_CTRL, 0, genlBody(CTRL_CMD_GETFAMILY, 1, [nlString(CTRL_ATTR_FAMILY_NAME, name)]), operation);
  if (reply.error?.errno === ENOENT) return undefined;
  if (reply.error) throw new NetOpError(operation, reply.error.message ?? errnoText(reply.error.errno));
  const id = reply.messages.map((m) => genlAttrs(m).get(CTRL_ATTR_FAMILY_ID)).find((a) => a !== undefined);
  if (!id) throw new NetOpError(operation, "the controller's answer has no family id");
  return new DataView(id.buffer, id.byteOffset, id.byteLength).getUint16(0, true);
}
