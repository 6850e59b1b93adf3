/**
 * The spec versions, as constants only: the one list every part of tscni takes them from (the spec layer, the
 * plugins, the registry that answers VERSION without loading a plugin, and the C launcher's generated table).
 * No imports, so the start-up path can read it for free.
 * @module
 */

/** Every spec version, oldest first. */
export const ALL_VERSIONS = ["0.1.0", "0.2.0", "0.3.0", "0.3.1", "0.4.0", "1.0.0", "1.1.0"] as const;
/** Versions before the rich (0.3.0+) result format. */
export const LEGACY_VERSIONS = ["0.1.0", "0.2.0"] as const;
/** The newest spec version this implementation speaks (the `cniVersion` of a VERSION answer). */
export const CURRENT_VERSION = "1.1.0";

/** A spec version. */
export type SpecVersion = (typeof ALL_VERSIONS)[number];

/** The versions from `V` on, as a type (all of them for a `string`, none for an unknown version). */
export type VersionsFrom<V extends string, List extends readonly string[] = typeof ALL_VERSIONS> = List extends readonly [
  infer First extends string,
  ...infer Rest extends readonly string[],
]
  ? First extends V
    ? List[number]
    : VersionsFrom<V, Rest>
  : never;

/** The versions from `version` on (empty when it is not a known version). */
export function versionsStartingFrom<const V extends string>(version: V): VersionsFrom<V>[] {
  const i = (ALL_VERSIONS as readonly string[]).indexOf(version);
  return (i < 0 ? [] : ALL_VERSIONS.slice(i)) as VersionsFrom<V>[];
}
