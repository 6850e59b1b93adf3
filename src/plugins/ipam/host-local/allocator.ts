/**
 * host-local's allocation strategy, as Go's `backend/allocator`: one address per range set, a requested
 * address when one falls in the set, otherwise round robin from the last reserved address, wrapping across
 * the set's ranges and skipping gateways, so a crash-looping container does not get the same address again
 * until the whole set has been used.
 * @module
 */

import type { IPAddress } from "#ip/ip.js";
import { ipEqual, nextIP } from "#ip/ip-math.js";
import { failure } from "#spec/errors.js";
import type { IPConfig } from "#spec/result/types100.js";
import { type IPRange, type RangeSet, rangeFor, rangeSetContains, rangeSetToString } from "./config.js";
import type { IPStore } from "./store.js";

/** An allocation failure that is no configuration error (Go's plugins report these as code 999). */

/** The result entry for an address of `range`: the range's prefix and gateway. */
const ipConfig = (ip: IPAddress, range: IPRange): IPConfig => ({ address: `${ip.text}/${range.subnet.prefix}`, gateway: range.gateway.text });

/**
 * Walks a range set once around, starting after `after` (when it lies in the set) or at the first range's
 * rangeStart, wrapping from each rangeEnd to the next range's rangeStart and skipping gateways.
 */
export class RangeIterator {
  private rangeIdx = 0;
  private cur: IPAddress | undefined;
  private startIP: IPAddress | undefined;

  constructor(
    private readonly set: RangeSet,
    after?: IPAddress,
  ) {
    if (after && rangeSetContains(set, after)) {
      this.rangeIdx = set.ranges.findIndex((r) => r === rangeFor(set, after));
      this.cur = after; // the first next() returns the address after it
    }
  }

  /** The next candidate and its range, or undefined once the walk is back where it started. */
  next(): { ip: IPAddress; range: IPRange } | undefined {
    for (;;) {
      let r = this.set.ranges[this.rangeIdx]!;
      if (this.cur === undefined) {
        this.cur = r.rangeStart;
        this.startIP = this.cur;
      } else {
        if (ipEqual(this.cur, r.rangeEnd)) {
          this.rangeIdx = (this.rangeIdx + 1) % this.set.ranges.length;
          r = this.set.ranges[this.rangeIdx]!;
          this.cur = r.rangeStart;
        } else {
          this.cur = nextIP(this.cur)!; // below rangeEnd, so there is a next address
        }
        if (this.startIP === undefined) this.startIP = this.cur;
        else if (ipEqual(this.cur, this.startIP)) return undefined;
      }
      if (!ipEqual(this.cur, r.gateway)) return { ip: this.cur, range: r };
    }
  }
}

/** Allocates from one range set (`index` is its position, which names its last_reserved_ip file). */
export class IPAllocator {
  private readonly rangeID: string;

  constructor(
    readonly rangeSet: RangeSet,
    private readonly store: IPStore,
    index: number,
  ) {
    this.rangeID = String(index);
  }

  /** Allocates `requested` (which must lie in this set) or the next free address, holding the store lock. */
  get(id: string, ifname: string, requested?: IPAddress): Promise<IPConfig> {
    return this.store.withLock(() => (requested ? this.getRequested(id, ifname, requested) : this.getNext(id, ifname)));
  }

  private getRequested(id: string, ifname: string, requested: IPAddress): IPConfig {
    const range = rangeFor(this.rangeSet, requested);
    if (!range) throw failure(`${requested.text} not in range set ${rangeSetToString(this.rangeSet)}`);
    if (ipEqual(requested, range.gateway)) throw failure(`requested ip ${requested.text} is subnet's gateway`);
    if (!this.store.reserve(id, ifname, requested, this.rangeID)) {
      throw failure(`requested IP address ${requested.text} is not available in range set ${rangeSetToString(this.rangeSet)}`);
    }
    return ipConfig(requested, range);
  }

  private getNext(id: string, ifname: string): IPConfig {
    // The spec does not allow two allocations for one attachment (the "container restart" error).
    for (const allocated of this.store.getByID(id, ifname)) {
      if (rangeSetContains(this.rangeSet, allocated)) {
        throw failure(`${allocated.text} has been allocated to ${id}, duplicate allocation is not allowed`);
      }
    }
    const iter = new RangeIterator(this.rangeSet, this.store.lastReservedIP(this.rangeID));
    for (let candidate = iter.next(); candidate; candidate = iter.next()) {
      if (this.store.reserve(id, ifname, candidate.ip, this.rangeID)) return ipConfig(candidate.ip, candidate.range);
    }
    throw failure(`no IP addresses available in range set: ${rangeSetToString(this.rangeSet)}`);
  }

  /** Frees every address of (id, ifname), holding the store lock. */
  release(id: string, ifname: string): Promise<void> {
    return this.store.withLock(() => this.store.releaseByID(id, ifname));
  }
}
