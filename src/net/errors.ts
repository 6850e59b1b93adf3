/**
 * The network layer's failure, as plugins see it: a NetOpError names the operation and the kernel's or the tool's
 * reason, and carries its kind (from the kernel's errno, or the tool's words for it), which callers switch on.
 * @module
 */
export { NetOpError, type NetErrorKind } from "#sys/exec.js";
