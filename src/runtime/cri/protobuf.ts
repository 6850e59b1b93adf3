/**
 * The protobuf wire format, as far as the few CRI messages tscni exchanges need it: writing string and nested
 * message fields, and reading any message field by field (varints, fixed 32/64-bit and length-delimited values;
 * unknown fields are skipped, as protobuf requires). Hand-rolled rather than a protobuf library: the messages are
 * four small ones, and a tool that runs once per GC should not load a code generator's runtime.
 * @module
 */

/** A message that does not decode: what was wrong and at which byte. */
export class ProtobufError extends Error {
  constructor(
    message: string,
    readonly offset: number,
  ) {
    super(`malformed protobuf message at byte ${offset}: ${message}`);
    this.name = "ProtobufError";
  }
}

/** The wire types of protobuf 3 (groups, types 3 and 4, are refused when read). */
export const WireType = { Varint: 0, Fixed64: 1, LengthDelimited: 2, Fixed32: 5 } as const;
type WireTypeOf<K extends keyof typeof WireType> = (typeof WireType)[K];

/** Builds a message: fields are appended in call order (protobuf accepts any order). */
export class ProtoWriter {
  private readonly parts: Buffer[] = [];

  private tag(field: number, wireType: number): void {
    this.varint((field << 3) | wireType);
  }

  private varint(value: number): void {
    const bytes: number[] = [];
    let v = value;
    while (v > 0x7f) {
      bytes.push((v & 0x7f) | 0x80);
      v = Math.floor(v / 128);
    }
    bytes.push(v);
    this.parts.push(Buffer.from(bytes));
  }

  /** A string field; an empty string is left out (proto3's default value). */
  string(field: number, value: string): this {
    if (value === "") return this;
    return this.bytes(field, Buffer.from(value, "utf8"));
  }

  /** A nested message or bytes field (written even when empty: a present, empty message differs from none). */
  bytes(field: number, value: Uint8Array): this {
    this.tag(field, WireType.LengthDelimited);
    this.varint(value.length);
    this.parts.push(Buffer.from(value));
    return this;
  }

  finish(): Buffer {
    return Buffer.concat(this.parts);
  }
}

/** One field as read: its number, wire type and raw value (a varint as an unsigned 64-bit bigint, else bytes). */
export type ProtoField =
  | { field: number; wireType: WireTypeOf<"Varint">; value: bigint }
  | { field: number; wireType: WireTypeOf<"Fixed64" | "LengthDelimited" | "Fixed32">; value: Buffer };

/** Reads a varint at `pos`; returns it and the position after it. */
function readVarint(buf: Buffer, pos: number): [bigint, number] {
  let result = 0n;
  for (let i = 0, at = pos; i < 10; i++, at++) {
    if (at >= buf.length) throw new ProtobufError("truncated varint", pos);
    const b = buf[at]!;
    result |= BigInt(b & 0x7f) << BigInt(7 * i);
    if ((b & 0x80) === 0) return [result & 0xffff_ffff_ffff_ffffn, at + 1];
  }
  throw new ProtobufError("varint longer than 10 bytes", pos);
}

/** Every field of a message, in wire order. Throws ProtobufError on truncation or a group. */
export function* readFields(buf: Buffer): Generator<ProtoField> {
  let pos = 0;
  while (pos < buf.length) {
    const start = pos;
    const [key, afterKey] = readVarint(buf, pos);
    pos = afterKey;
    const field = Number(key >> 3n);
    const wireType = Number(key & 7n);
    if (field === 0) throw new ProtobufError("field number 0", start);
    switch (wireType) {
      case WireType.Varint: {
        const [value, next] = readVarint(buf, pos);
        pos = next;
        yield { field, wireType: WireType.Varint, value };
        break;
      }
      case WireType.LengthDelimited: {
        const [length, next] = readVarint(buf, pos);
        if (length > BigInt(buf.length - next)) throw new ProtobufError(`field ${field} is ${length} bytes long, the message ends before`, start);
        pos = next + Number(length);
        yield { field, wireType: WireType.LengthDelimited, value: buf.subarray(next, pos) };
        break;
      }
      case WireType.Fixed64:
      case WireType.Fixed32: {
        const size = wireType === WireType.Fixed64 ? 8 : 4;
        if (pos + size > buf.length) throw new ProtobufError(`truncated fixed-size field ${field}`, start);
        yield { field, wireType: wireType === WireType.Fixed64 ? WireType.Fixed64 : WireType.Fixed32, value: buf.subarray(pos, pos + size) };
        pos += size;
        break;
      }
      default:
        throw new ProtobufError(`field ${field} has wire type ${wireType}, which proto3 does not use`, start);
    }
  }
}

/** A length-delimited field's bytes as UTF-8 text; a field of another wire type is an error naming `name`. */
export function asString(f: ProtoField, name: string): string {
  if (f.wireType !== WireType.LengthDelimited) throw new ProtobufError(`${name} (field ${f.field}) is not length-delimited`, 0);
  return f.value.toString("utf8");
}

/** A length-delimited field's bytes as a nested message. */
export function asMessage(f: ProtoField, name: string): Buffer {
  if (f.wireType !== WireType.LengthDelimited) throw new ProtobufError(`${name} (field ${f.field}) is not a message`, 0);
  return f.value;
}

/** A varint field as a 32-bit enum or integer value (negative int32s arrive as 64-bit two's complement). */
export function asInt32(f: ProtoField, name: string): number {
  if (f.wireType !== WireType.Varint) throw new ProtobufError(`${name} (field ${f.field}) is not a varint`, 0);
  return Number(BigInt.asIntN(32, f.value));
}
