//! Keyed sequences (seqsvr style): one increasing counter per (space, key), served from memory,
//! with a durable upper bound that is raised a step at a time before any value above it is
//! handed out. This module is the arithmetic: sections, the floor a key continues from, the bound
//! rule, the choice of the entry to evict and the hashing that places entries in the cache.
//!
//! The model. Every value handed out for any key of a space is at most the space's durable
//! bound `G` (persisted before the value is handed out). A key whose current value is not in
//! memory continues from a *floor* that is at least every value it handed out before: the floor
//! of its section (consecutive keys, `section_size` of them) while that section is in memory,
//! otherwise the space's floor. Floors only go up: evicting a key raises its section's floor to
//! the key's value, evicting a section raises the space's floor to the section's; after a
//! restart the space's floor is the persisted bound. So a key never goes back, whatever was
//! evicted, and correctness never depends on the cache's size.
//!
//! Bounds per section (seqsvr's `max_seq` per section). The durable bound is not one per space
//! but one per *bucket* of sections: section `s` uses bucket `s mod BUCKETS` ([`bucket_of`]), so
//! the first `BUCKETS` consecutive sections (and any `BUCKETS` consecutive ones) each have a bound
//! of their own, and sections further apart share one. The invariant, per bucket `b`: every value
//! handed out for a key of a section of bucket `b` is at most `bound[b]`, which is durable before
//! any value above its previous value is handed out; raising it ([`raised_bound`]) moves it a
//! whole number of steps, or to the top of the node's class when a whole step would pass it. The floors that memory falls back on (an evicted section's) are per
//! bucket too, and only ever take values of keys of that bucket. So after a restart a key
//! continues from its own bucket's bound: at most its section's busiest key (of the sections
//! sharing the bucket) plus a step above its last value, never the space's busiest key.

/// Largest step (values per bound raise).
pub const MAX_STEP: i64 = 1_000_000_000;
/// Largest section (consecutive keys sharing a floor).
pub const MAX_SECTION_SIZE: i64 = 1_000_000_000;

/// Durable bounds (and memory floors) per space: sections `s` and `s + BUCKETS` share one.
pub const BUCKETS: usize = 1024;

/// The bucket of bounds of section `section`: `section mod BUCKETS`, non-negative.
pub fn bucket_of(section: i64) -> usize {
    section.rem_euclid(BUCKETS as i64) as usize
}

/// The bound a raise for values writes (`keyed_next`: values up to `need` are to be handed out):
/// `old` if it already covers `need`, else the smallest `old + k * step` (k >= 1) that does, but
/// never above `top`, the largest counter of the node's class ([`Stride::limit`]; the largest
/// bigint in plain mode): a raise whose whole step would pass the top of the class writes the top,
/// so that every value of the class up to it is handed out, then the key is exhausted. A `need`
/// above `top` (never asked for: [`take`] refuses it first) is covered as it is.
pub fn raised_bound(old: i64, need: i64, step: i64, top: i64) -> i64 {
    if need <= old {
        return old;
    }
    let v = step_above(old, need, step);
    if v > top as i128 {
        top.max(need)
    } else {
        v as i64
    }
}

/// The bound a move writes (`keyed_set_node`, the import's raise to the old cluster's bounds),
/// after which every key of the bucket continues from the bound itself, above `floor`: exactly
/// `floor`, or `old` if that is higher (a bound is never lowered). Not rounded up to a whole step:
/// that would skip values, and within a step of the top of the class skip its last values for good
/// (a key continuing from a bound above the top hands out none).
pub fn moved_bound(old: i64, floor: i64) -> i64 {
    old.max(floor)
}

/// The smallest `old + k * step` (k >= 1) at least `need` (> `old`), without overflow.
fn step_above(old: i64, need: i64, step: i64) -> i128 {
    let step = step.max(1) as i128;
    let k = (need as i128 - old as i128 + step - 1) / step;
    old as i128 + k * step
}

/// The section of `key`: `key` divided by `section_size`, rounded towards minus infinity, so
/// that negative keys form sections of the same size.
pub fn section_of(key: i64, section_size: i64) -> i64 {
    key.div_euclid(section_size.max(1))
}

/// Checks a space's configuration; the error says what is wrong.
pub fn validate_config(step: i64, section_size: i64) -> Result<(), String> {
    if !(1..=MAX_STEP).contains(&step) {
        return Err(format!("step must be between 1 and {MAX_STEP}, got {step}"));
    }
    if !(1..=MAX_SECTION_SIZE).contains(&section_size) {
        return Err(format!("section_size must be between 1 and {MAX_SECTION_SIZE}, got {section_size}"));
    }
    Ok(())
}

/// Checks how many values one call may reserve: 1 ..= step (a reservation needs at most one
/// raise of the bound beyond the one in flight).
pub fn validate_count(n: i64, step: i64) -> Result<(), String> {
    if n < 1 {
        return Err(format!("the number of values to reserve must be positive, got {n}"));
    }
    if n > step {
        return Err(format!("at most step ({step}) values can be reserved at once, got {n}"));
    }
    Ok(())
}

/// Largest number of writable nodes of a space in fleet mode.
pub const MAX_NODES: i64 = 1024;

/// Checks a fleet-mode configuration: both of `nodes` and `node_index` or neither (plain mode),
/// `1 <= nodes <= MAX_NODES`, `0 <= node_index < nodes`. The error says what is wrong.
pub fn validate_nodes(nodes: Option<i64>, node_index: Option<i64>) -> Result<(), String> {
    match (nodes, node_index) {
        (None, None) => Ok(()),
        (Some(_), None) | (None, Some(_)) => {
            Err("nodes and node_index must be given together (fleet mode), or neither".to_string())
        }
        (Some(n), Some(k)) => {
            if !(1..=MAX_NODES).contains(&n) {
                return Err(format!("nodes must be between 1 and {MAX_NODES}, got {n}"));
            }
            if !(0..n).contains(&k) {
                return Err(format!("node_index must be between 0 and nodes - 1 ({}), got {k}", n - 1));
            }
            Ok(())
        }
    }
}

/// How a node's local counter of a key maps to the values it hands out. Plain mode is
/// `nodes = 1, index = 0` (the value is the counter). In fleet mode (`nodes` writable nodes,
/// this one `index`) counter `c` is value `c * nodes + index`: every value of the node is
/// congruent to its index modulo `nodes`, so two nodes of the fleet never hand out the same value
/// of a key, and a node's values of a key increase with its counter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stride {
    pub nodes: i64,
    pub index: i64,
    /// The largest counter whose value fits in a bigint: `(i64::MAX - index) / nodes`.
    pub limit: i64,
}

impl Stride {
    pub const PLAIN: Stride = Stride { nodes: 1, index: 0, limit: i64::MAX };

    /// The stride of a validated configuration (see [`validate_nodes`]); plain mode for None.
    pub fn new(nodes: Option<i64>, node_index: Option<i64>) -> Stride {
        match (nodes, node_index) {
            (Some(n), Some(k)) if (1..=MAX_NODES).contains(&n) && (0..n).contains(&k) => {
                Stride { nodes: n, index: k, limit: (i64::MAX - k) / n }
            }
            _ => Stride::PLAIN,
        }
    }

    /// The value of counter `c`, for `c <= limit` (what [`take`] hands out): one multiply-add.
    #[inline(always)]
    pub fn value(&self, c: i64) -> i64 {
        c.wrapping_mul(self.nodes).wrapping_add(self.index)
    }

    /// The value `keyed_last` reports for a key whose counter (or the floor it continues from)
    /// is `c`: the value of `c`, clamped to the node's values that fit in a bigint (a floor can
    /// exceed `limit` once the key is exhausted; a counter below zero only if the bounds were
    /// edited by hand). Every value handed out for the key is at most this.
    pub fn last_value(&self, c: i64) -> i64 {
        let c = c.clamp((i64::MIN + self.nodes - 1) / self.nodes, self.limit);
        c * self.nodes + self.index
    }

    /// The counter floor at which every later value exceeds `above`: the smallest `f >= 0` with
    /// `(f + 1) * nodes + index > above`, i.e. `floor((above - index) / nodes)`, at least 0.
    pub fn floor_above(&self, above: i64) -> i64 {
        let f = (above as i128 - self.index as i128).div_euclid(self.nodes as i128);
        f.clamp(0, i64::MAX as i128) as i64
    }
}

/// What taking `n` values after `cur` under the durable bound `bound` gives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Take {
    /// Values `cur + 1 ..= last` are handed out; the key's current value becomes `last`.
    Issue { last: i64 },
    /// `need` is above the durable bound: raise the bound to at least `need` first.
    Raise { need: i64 },
    /// `cur + n` does not fit in a bigint: the key is exhausted.
    Exhausted,
}

/// The bound rule: a value is handed out only if it is at most the durable bound, and a counter
/// only if it is at most `limit` ([`Stride::limit`]: its value fits in a bigint).
#[inline(always)]
pub fn take(cur: i64, n: i64, bound: i64, limit: i64) -> Take {
    match cur.checked_add(n) {
        Some(last) if last > limit => Take::Exhausted,
        None => Take::Exhausted,
        Some(last) if last <= bound => Take::Issue { last },
        Some(need) => Take::Raise { need },
    }
}

/// The floor a space starts from, given its backing sequence's state: every value ever handed
/// out is at most the last bound the sequence returned (`last_value` when `is_called`); a
/// sequence never called (START WITH step) has handed out nothing: floor `last_value - step`.
pub fn floor_from_sequence(last_value: i64, is_called: bool, step: i64) -> i64 {
    if is_called {
        last_value
    } else {
        last_value.saturating_sub(step)
    }
}

/// The state of one way of a cache set, as the eviction choice sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Way {
    /// Free, or holding an entry of a space that no longer exists (reusable as is).
    Free,
    /// In use, last touched at `tick`.
    Used { tick: u64 },
}

/// The way to (re)use for a new entry: the first free one, else the least recently used (the
/// smallest tick; the first of equals). None only for an empty set.
pub fn choose_victim(ways: &[Way]) -> Option<usize> {
    if let Some(i) = ways.iter().position(|w| *w == Way::Free) {
        return Some(i);
    }
    ways.iter()
        .enumerate()
        .min_by_key(|(_, w)| match w {
            Way::Used { tick } => *tick,
            Way::Free => 0,
        })
        .map(|(i, _)| i)
}

/// SplitMix64's finaliser: a cheap, well-mixed 64-bit hash.
pub fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

/// Where a space's section lives: its lock partition. Keys are placed in their section's
/// partition, so that one lock covers a key and its section's floor.
pub fn partition_of(space_gen: u64, section: i64, partitions: usize) -> usize {
    (mix(space_gen ^ mix(section as u64)) % partitions.max(1) as u64) as usize
}

/// The set (within a partition) of a key (`is_section` false) or of a section's floor.
pub fn set_of(space_gen: u64, id: i64, is_section: bool, sets: usize) -> usize {
    let salt = if is_section { 0x5EC7_1011 } else { 0x0 };
    (mix(mix(id as u64 ^ salt) ^ space_gen.rotate_left(17)) % sets.max(1) as u64) as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sections_are_consecutive_keys_including_negative_ones() {
        assert_eq!(section_of(0, 1000), 0);
        assert_eq!(section_of(999, 1000), 0);
        assert_eq!(section_of(1000, 1000), 1);
        assert_eq!(section_of(-1, 1000), -1);
        assert_eq!(section_of(-1000, 1000), -1);
        assert_eq!(section_of(-1001, 1000), -2);
        assert_eq!(section_of(i64::MAX, 1000), i64::MAX / 1000);
        assert_eq!(section_of(i64::MIN, 1000), -9_223_372_036_854_776);
        assert_eq!(section_of(i64::MIN, 1), i64::MIN);
        assert_eq!(section_of(5, 1), 5);
    }

    #[test]
    fn configuration_limits() {
        assert!(validate_config(1, 1).is_ok());
        assert!(validate_config(MAX_STEP, MAX_SECTION_SIZE).is_ok());
        assert!(validate_config(0, 1).unwrap_err().contains("step must be"));
        assert!(validate_config(-5, 1).is_err());
        assert!(validate_config(MAX_STEP + 1, 1).is_err());
        assert!(validate_config(1, 0).unwrap_err().contains("section_size"));
        assert!(validate_config(1, MAX_SECTION_SIZE + 1).is_err());
    }

    #[test]
    fn count_limits() {
        assert!(validate_count(1, 10).is_ok());
        assert!(validate_count(10, 10).is_ok());
        assert!(validate_count(0, 10).unwrap_err().contains("positive"));
        assert!(validate_count(-1, 10).is_err());
        assert!(validate_count(i64::MIN, 10).is_err());
        assert!(validate_count(11, 10).unwrap_err().contains("at most step"));
    }

    #[test]
    fn values_at_or_below_the_bound_are_issued_above_it_raise() {
        assert_eq!(take(0, 1, 1000, i64::MAX), Take::Issue { last: 1 });
        assert_eq!(take(999, 1, 1000, i64::MAX), Take::Issue { last: 1000 });
        assert_eq!(take(1000, 1, 1000, i64::MAX), Take::Raise { need: 1001 });
        assert_eq!(take(995, 10, 1000, i64::MAX), Take::Raise { need: 1005 });
        assert_eq!(take(990, 10, 1000, i64::MAX), Take::Issue { last: 1000 });
        // a floor above the bound (never: floors are bounded by it) still only raises
        assert_eq!(take(2000, 1, 1000, i64::MAX), Take::Raise { need: 2001 });
    }

    #[test]
    fn the_largest_bigint_is_the_last_value() {
        assert_eq!(take(i64::MAX - 1, 1, i64::MAX, i64::MAX), Take::Issue { last: i64::MAX });
        assert_eq!(take(i64::MAX, 1, i64::MAX, i64::MAX), Take::Exhausted);
        assert_eq!(take(i64::MAX - 5, 10, i64::MAX, i64::MAX), Take::Exhausted);
        assert_eq!(take(i64::MIN, 1, 0, i64::MAX), Take::Issue { last: i64::MIN + 1 });
    }

    #[test]
    fn fleet_configuration_limits() {
        assert!(validate_nodes(None, None).is_ok());
        assert!(validate_nodes(Some(1), Some(0)).is_ok());
        assert!(validate_nodes(Some(MAX_NODES), Some(MAX_NODES - 1)).is_ok());
        assert!(validate_nodes(Some(2), None).unwrap_err().contains("together"));
        assert!(validate_nodes(None, Some(0)).unwrap_err().contains("together"));
        assert!(validate_nodes(Some(0), Some(0)).unwrap_err().contains("nodes must be between 1 and 1024"));
        assert!(validate_nodes(Some(MAX_NODES + 1), Some(0)).is_err());
        assert!(validate_nodes(Some(-3), Some(0)).is_err());
        assert!(validate_nodes(Some(3), Some(3))
            .unwrap_err()
            .contains("node_index must be between 0 and nodes - 1 (2)"));
        assert!(validate_nodes(Some(3), Some(-1)).is_err());
        // an invalid configuration is never a stride: plain mode
        assert_eq!(Stride::new(Some(3), Some(3)), Stride::PLAIN);
        assert_eq!(Stride::new(None, None), Stride::PLAIN);
    }

    #[test]
    fn plain_mode_values_are_the_counters() {
        let p = Stride::PLAIN;
        for c in [0, 1, 2, 1000, i64::MAX - 1, i64::MAX] {
            assert_eq!(p.value(c), c);
            assert_eq!(p.last_value(c), c);
        }
        assert_eq!(p.limit, i64::MAX);
        assert_eq!(p.floor_above(12_345), 12_345);
        assert_eq!(p.floor_above(-5), 0);
    }

    #[test]
    fn fleet_values_are_the_nodes_residue_class_and_increase() {
        for n in [1i64, 2, 3, 7, 1000, MAX_NODES] {
            for k in [0, n / 2, n - 1] {
                let s = Stride::new(Some(n), Some(k));
                assert_eq!((s.nodes, s.index), (n, k));
                let mut prev = i64::MIN;
                for c in (1..50).chain(s.limit - 50..=s.limit) {
                    let v = s.value(c);
                    assert_eq!(v.rem_euclid(n), k, "n={n} k={k} c={c}");
                    assert!(v > prev, "n={n} k={k} c={c}");
                    prev = v;
                }
                // the limit is the last counter that fits: its value is the node's largest bigint
                let top = s.value(s.limit);
                assert!(i64::MAX - top < n, "n={n} k={k}");
                assert!((s.limit as i128 + 1) * n as i128 + k as i128 > i64::MAX as i128);
            }
        }
        // two nodes of a fleet never share a value
        let (a, b) = (Stride::new(Some(2), Some(0)), Stride::new(Some(2), Some(1)));
        let va: std::collections::HashSet<i64> = (1..10_000).map(|c| a.value(c)).collect();
        assert!((1..10_000).all(|c| !va.contains(&b.value(c))));
        assert_eq!((a.value(1), a.value(2), b.value(1), b.value(2)), (2, 4, 3, 5));
    }

    #[test]
    fn fleet_counters_stop_before_the_value_overflows() {
        let s = Stride::new(Some(3), Some(2));
        assert_eq!(s.limit, (i64::MAX - 2) / 3);
        assert_eq!(take(s.limit - 1, 1, i64::MAX, s.limit), Take::Issue { last: s.limit });
        assert_eq!(take(s.limit, 1, i64::MAX, s.limit), Take::Exhausted);
        assert_eq!(take(s.limit - 5, 10, i64::MAX, s.limit), Take::Exhausted);
        // a raise is asked for only below the limit
        assert_eq!(take(100, 1, 100, s.limit), Take::Raise { need: 101 });
        assert_eq!(take(s.limit, 1, s.limit, s.limit), Take::Exhausted);
        // a floor above the limit (the bound raised to the largest bigint) reports the node's top
        assert_eq!(s.last_value(i64::MAX), s.value(s.limit));
        assert_eq!(s.last_value(s.limit), s.value(s.limit));
        assert_eq!(s.last_value(0), 2);
        assert_eq!(s.last_value(i64::MIN).rem_euclid(3), 2);
        let big = Stride::new(Some(MAX_NODES), Some(MAX_NODES - 1));
        assert_eq!(big.value(big.limit), i64::MAX);
        let zero = Stride::new(Some(MAX_NODES), Some(0));
        assert_eq!(i64::MAX - zero.value(zero.limit), MAX_NODES - 1);
    }

    /// keyed_next(space, key, n) advances the counter by n and returns the value of the last
    /// counter: the caller owns result - (n - 1) * nodes .. result, step nodes, and those are
    /// exactly the values of the n counters taken.
    #[test]
    fn a_reservation_of_n_values_is_n_values_of_the_class() {
        let s = Stride::new(Some(4), Some(3));
        let mut cur = 0i64;
        let mut all = Vec::new();
        for n in [1i64, 5, 1, 10, 3] {
            let Take::Issue { last } = take(cur, n, i64::MAX, s.limit) else { panic!() };
            let result = s.value(last);
            let owned: Vec<i64> = (0..n).map(|i| result - (n - 1 - i) * s.nodes).collect();
            let taken: Vec<i64> = (cur + 1..=last).map(|c| s.value(c)).collect();
            assert_eq!(owned, taken);
            all.extend(owned);
            cur = last;
        }
        assert_eq!(all.len(), 20);
        assert!(all.windows(2).all(|w| w[1] - w[0] == 4));
        assert_eq!(all[0], 7);
        // keyed_last after the reservations: the last value owned
        assert_eq!(s.last_value(cur), *all.last().unwrap());
    }

    #[test]
    fn a_node_moved_above_a_value_continues_above_it() {
        for (n, k) in [(1i64, 0i64), (2, 0), (2, 1), (3, 2), (1024, 5)] {
            let s = Stride::new(Some(n), Some(k));
            for above in [-10i64, 0, 1, 5, 999, 1000, 1001, 123_456_789, i64::MAX - 3000] {
                let f = s.floor_above(above);
                assert!(s.value(f + 1) > above, "n={n} k={k} above={above}");
                // the least such floor (no needless gap)
                assert!(f == 0 || s.value(f) <= above, "n={n} k={k} above={above}");
            }
            // above the node's top value: a floor at or past the limit (the key is exhausted)
            assert!(s.floor_above(i64::MAX) >= s.limit);
        }
    }

    #[test]
    fn floor_of_a_sequence() {
        assert_eq!(floor_from_sequence(1000, false, 1000), 0);
        assert_eq!(floor_from_sequence(1000, true, 1000), 1000);
        assert_eq!(floor_from_sequence(5000, true, 1000), 5000);
        assert_eq!(floor_from_sequence(i64::MIN + 1, false, 1000), i64::MIN);
    }

    #[test]
    fn eviction_prefers_free_ways_then_the_least_recently_used() {
        assert_eq!(choose_victim(&[]), None);
        assert_eq!(choose_victim(&[Way::Used { tick: 5 }, Way::Free, Way::Free]), Some(1));
        assert_eq!(
            choose_victim(&[Way::Used { tick: 5 }, Way::Used { tick: 3 }, Way::Used { tick: 9 }]),
            Some(1)
        );
        assert_eq!(choose_victim(&[Way::Used { tick: 3 }, Way::Used { tick: 3 }]), Some(0));
        assert_eq!(choose_victim(&[Way::Used { tick: u64::MAX }, Way::Used { tick: 0 }]), Some(1));
    }

    /// The floor rule, simulated: a key that is evicted and loaded again (through its section's
    /// floor, or through the space's floor when the section was evicted too) never goes back.
    #[test]
    fn evicted_keys_continue_above_every_value_they_had() {
        use std::collections::HashMap;
        let (step, size) = (100i64, 10i64);
        let mut bound = 0i64;
        let mut space_floor = 0i64;
        let mut sections: HashMap<i64, i64> = HashMap::new();
        let mut keys: HashMap<i64, i64> = HashMap::new();
        let mut last_seen: HashMap<i64, i64> = HashMap::new();
        let mut rng = 0x1234_5678u64;
        for i in 0..200_000u64 {
            rng = mix(rng ^ i);
            let key = (rng % 300) as i64;
            let sec = section_of(key, size);
            let cur = match keys.get(&key) {
                Some(c) => *c,
                None => *sections.entry(sec).or_insert(space_floor),
            };
            let last = loop {
                match take(cur, 1, bound, i64::MAX) {
                    Take::Issue { last } => break last,
                    Take::Raise { need } => {
                        while bound < need {
                            bound += step;
                        }
                    }
                    Take::Exhausted => unreachable!(),
                }
            };
            keys.insert(key, last);
            if let Some(prev) = last_seen.insert(key, last) {
                assert!(last > prev, "key {key} went from {prev} to {last}");
            }
            // evict at random: a key into its section's floor, or a section into the space's
            if rng % 7 == 0 {
                let victim = ((rng >> 8) % 300) as i64;
                if let Some(c) = keys.remove(&victim) {
                    let s = section_of(victim, size);
                    match sections.get_mut(&s) {
                        Some(f) => *f = (*f).max(c),
                        None => space_floor = space_floor.max(c),
                    }
                }
            }
            if rng % 13 == 0 {
                let s = ((rng >> 16) % 30) as i64;
                if let Some(f) = sections.remove(&s) {
                    space_floor = space_floor.max(f);
                }
            }
            assert!(space_floor <= bound);
        }
    }

    #[test]
    fn buckets_of_sections() {
        assert_eq!(bucket_of(0), 0);
        assert_eq!(bucket_of(1023), 1023);
        assert_eq!(bucket_of(1024), 0);
        assert_eq!(bucket_of(-1), 1023);
        assert_eq!(bucket_of(i64::MIN), 0);
        assert_eq!(bucket_of(i64::MAX), 1023);
        // a million keys in sections of 1,000: each section has its own bound
        let mut seen = std::collections::HashSet::new();
        for k in (0..1_000_000i64).step_by(1000) {
            assert!(seen.insert(bucket_of(section_of(k, 1000))));
        }
    }

    #[test]
    fn raises_are_whole_steps_and_stop_at_the_largest_bigint() {
        let m = i64::MAX;
        assert_eq!(raised_bound(0, 1, 1000, m), 1000);
        assert_eq!(raised_bound(0, 1000, 1000, m), 1000);
        assert_eq!(raised_bound(0, 1001, 1000, m), 2000);
        assert_eq!(raised_bound(5000, 4000, 1000, m), 5000);
        assert_eq!(raised_bound(5000, 5000, 1000, m), 5000);
        assert_eq!(raised_bound(5000, 12_345, 1000, m), 13_000);
        assert_eq!(raised_bound(i64::MAX - 1000, i64::MAX, 1000, m), i64::MAX);
        assert_eq!(raised_bound(i64::MAX - 10, i64::MAX - 5, 1000, m), i64::MAX);
        assert_eq!(raised_bound(-100, -50, 7, m), -44);
    }

    /// The restart rule per bucket, simulated: keys of a skewed load over many sections, the
    /// durable bounds per bucket and the memory floors per bucket (an evicted key's value goes
    /// into its bucket's floor; a key not in memory continues from it), and a restart now and
    /// then (memory lost: the floors become the durable bounds). No key ever goes back; at every
    /// restart each bucket's bound is less than `step` above the largest value of its own keys;
    /// and quiet buckets stay far below the busy ones.
    #[test]
    fn after_a_restart_keys_continue_above_their_own_bucket() {
        use std::collections::HashMap;
        let (step, size) = (100i64, 10i64);
        let mut bounds = vec![0i64; BUCKETS];
        let mut floors = vec![0i64; BUCKETS];
        let mut keys: HashMap<i64, i64> = HashMap::new();
        let mut last_seen: HashMap<i64, i64> = HashMap::new();
        let mut rng = 0xfeed_beefu64;
        let mut restarts = 0;
        for i in 0..300_000u64 {
            rng = mix(rng ^ i);
            // a busy head (keys 0..100, sections 0..9) and a long tail up to 100,000
            let key = if rng % 4 == 0 { (rng >> 8) as i64 % 100_000 } else { (rng >> 8) as i64 % 100 };
            let b = bucket_of(section_of(key, size));
            let cur = *keys.entry(key).or_insert(floors[b]);
            let last = loop {
                match take(cur, 1, bounds[b], i64::MAX) {
                    Take::Issue { last } => break last,
                    Take::Raise { need } => bounds[b] = raised_bound(bounds[b], need, step, i64::MAX),
                    Take::Exhausted => unreachable!(),
                }
            };
            keys.insert(key, last);
            if let Some(prev) = last_seen.insert(key, last) {
                assert!(last > prev, "key {key} went from {prev} to {last}");
            }
            if rng % 5 == 0 {
                // an eviction: the key's value into its bucket's floor
                let victim = ((rng >> 20) % 100_000) as i64;
                if let Some(v) = keys.remove(&victim) {
                    let vb = bucket_of(section_of(victim, size));
                    floors[vb] = floors[vb].max(v);
                }
            }
            if i % 50_000 == 49_999 {
                let mut bucket_max = vec![i64::MIN; BUCKETS];
                for (&k, &v) in &last_seen {
                    let kb = bucket_of(section_of(k, size));
                    bucket_max[kb] = bucket_max[kb].max(v);
                }
                for (kb, &m) in bucket_max.iter().enumerate() {
                    assert!(m == i64::MIN || (bounds[kb] >= m && bounds[kb] - m < step), "bucket {kb}");
                }
                keys.clear();
                floors.copy_from_slice(&bounds);
                restarts += 1;
            }
        }
        assert_eq!(restarts, 6);
        let head = bounds[bucket_of(0)];
        let quiet = bounds.iter().filter(|&&b| b < head / 2).count();
        assert!(quiet > BUCKETS / 2, "{quiet} quiet buckets, head bound {head}");
    }

    /// A raise near the top of a node's class: a whole step would pass the class's largest
    /// counter, so the bound stops there (node 3 of 16 and node 1023 of 1024, step 1000).
    #[test]
    fn raises_near_the_top_of_a_class_stop_at_its_top() {
        let s = Stride::new(Some(16), Some(3));
        let top = s.limit;
        assert_eq!(top, (i64::MAX - 3) / 16);
        assert_eq!(raised_bound(top - 40, top - 39, 1000, top), top);
        assert_eq!(raised_bound(top - 1000, top - 999, 1000, top), top);
        assert_eq!(raised_bound(top - 2000, top - 1999, 1000, top), top - 1000);
        assert_eq!(raised_bound(top - 1, top, 1, top), top);
        // a bound already at or past the top (written before the rule) is left alone
        assert_eq!(raised_bound(top, top, 1000, top), top);
        assert_eq!(raised_bound(top + 960, top, 1000, top), top + 960);
        // a move 40 values below the top: the keys continue from there, not from the top
        assert_eq!(moved_bound(0, top - 40), top - 40);
        assert_eq!(moved_bound(0, 5_500), 5_500);
        assert_eq!(moved_bound(7_000, 5_500), 7_000);
        // a floor past the top (the old holder reached it): the keys are exhausted
        assert_eq!(moved_bound(0, top + 5), top + 5);
        let big = Stride::new(Some(1024), Some(1023));
        assert_eq!(big.limit, (1i64 << 53) - 1);
        assert_eq!(raised_bound(big.limit - 40, big.limit - 39, 1000, big.limit), big.limit);
        assert_eq!(moved_bound(0, big.limit - 40), big.limit - 40);
        // plain mode: the top is the largest bigint, as before
        assert_eq!(raised_bound(i64::MAX - 40, i64::MAX - 39, 1000, i64::MAX), i64::MAX);
        assert_eq!(moved_bound(0, i64::MAX - 40), i64::MAX - 40);
    }

    /// What a key hands out from counter `cur` under the bound `bound` until it is exhausted:
    /// keyed_next's loop (take, raise, take again), with reservations of `n` values drawn from
    /// 1 ..= step (at most what is left, so that no call asks past the top). Checks every raise
    /// (it covers what was needed, and stays within the class unless the bound already was
    /// above it) and that the values handed out are consecutive counters; returns how many
    /// counters were handed out and the last one.
    fn drain(cur: i64, mut bound: i64, step: i64, top: i64, rng: &mut u64) -> (i64, i64) {
        let (mut cur, mut served) = (cur, 0i64);
        loop {
            let left = top.saturating_sub(cur);
            if left <= 0 {
                assert_eq!(take(cur, 1, bound, top), Take::Exhausted, "cur {cur} top {top}");
                return (served, cur);
            }
            *rng = mix(*rng);
            let n = (1 + (*rng % step as u64) as i64).min(left);
            match take(cur, n, bound, top) {
                Take::Issue { last } => {
                    assert_eq!(last, cur + n);
                    served += n;
                    cur = last;
                }
                Take::Raise { need } => {
                    let was = bound;
                    bound = raised_bound(bound, need, step, top);
                    assert!(bound >= need, "raise from {was} for {need}: {bound}");
                    assert!(bound <= top || was > top, "raise from {was} for {need}: {bound} > {top}");
                    assert!(bound > was);
                }
                Take::Exhausted => panic!("exhausted at {cur} with {left} values left, n {n}"),
            }
        }
    }

    /// The fleet configurations of the tests near the top: plain mode, and 2, 16 and 1024 nodes
    /// with every node index at the edges (first, second, middle, second to last, last).
    fn edge_strides() -> Vec<Stride> {
        let mut v = vec![Stride::PLAIN];
        for n in [1i64, 2, 16, 1024] {
            let mut idx = vec![0, 1, n / 2, n - 2, n - 1];
            idx.retain(|&k| (0..n).contains(&k));
            idx.sort_unstable();
            idx.dedup();
            v.extend(idx.into_iter().map(|k| Stride::new(Some(n), Some(k))));
        }
        v
    }

    /// How far below the top the tests start: every distance up to three steps for small steps,
    /// for large ones every distance up to 300 and those around one and two steps.
    fn distances(step: i64) -> Vec<i64> {
        let mut d: Vec<i64> = if step <= 100 {
            (0..=3 * step + 2).collect()
        } else {
            (0..=300).chain(step - 3..=step + 3).chain(2 * step - 3..=2 * step + 3).collect()
        };
        d.sort_unstable();
        d.dedup();
        d
    }

    /// Where the bounds' grid lies relative to the top ((top - bound) mod step): every alignment
    /// for small steps, those at the edges (and 40, the distance of the report) for large ones.
    fn alignments(step: i64) -> Vec<i64> {
        let mut a: Vec<i64> = if step <= 100 {
            (0..step).collect()
        } else {
            vec![0, 1, 2, 39, 40, 41, step / 2, step - 41, step - 40, step - 39, step - 2, step - 1]
        };
        a.retain(|&x| (0..step).contains(&x));
        a.sort_unstable();
        a.dedup();
        a
    }

    const STEPS: [i64; 6] = [1, 2, 10, 100, 1000, 10_000];

    /// A key whose counter is `d` below the top of its node's class, with the durable bound
    /// anywhere on the grid of whole steps at or above it (a bound raised in steps from 0, or
    /// left by a restart), hands out every one of the `d` values left, the last the largest
    /// bigint of the class, then 22003; a bound at or above the counter and below the top is
    /// where keys continue after a restart or an eviction.
    #[test]
    fn every_value_of_a_class_up_to_its_top_is_handed_out() {
        let mut rng = 0x5eed_u64;
        let mut cases = 0u64;
        for s in edge_strides() {
            let top = s.limit;
            for step in STEPS {
                for d in distances(step) {
                    let cur = top - d;
                    // the bound: the counter itself, or the first grid point above it of each alignment
                    let mut bounds = vec![cur];
                    for a in alignments(step) {
                        // bound b >= cur with (top - b) mod step == a, the least such
                        let b = top - a - ((top - a - cur).max(0) / step) * step;
                        if b >= cur {
                            bounds.push(b);
                        }
                    }
                    for b in bounds {
                        let (served, last) = drain(cur, b, step, top, &mut rng);
                        assert_eq!(served, d, "nodes {} index {} step {step} d {d} bound {b}", s.nodes, s.index);
                        assert_eq!(last, top);
                        if d > 0 {
                            let v = s.value(last);
                            assert!(i64::MAX - v < s.nodes && v.rem_euclid(s.nodes) == s.index);
                        }
                        cases += 1;
                    }
                }
            }
        }
        assert!(cases > 100_000, "{cases} cases");
    }

    /// `keyed_set_node(space, k, above)` (and the import's raise to the old cluster's bounds) `d`
    /// values below the top of the class, from bounds anywhere on the grid below: the keys
    /// continue above `above` and hand out every value of the class up to its top, then 22003.
    #[test]
    fn a_move_near_the_top_keeps_the_classs_last_values() {
        let mut rng = 0xfeed_u64;
        let mut cases = 0u64;
        for s in edge_strides() {
            let top = s.limit;
            for step in STEPS {
                for d in distances(step) {
                    // `above`: the value of the counter d below the top, or one more (not a value
                    // of the class when there are several nodes)
                    for above in [s.value(top - d), s.value(top - d).saturating_add(1)] {
                        let floor = s.floor_above(above);
                        assert!(floor >= top || s.value(floor + 1) > above);
                        for a in alignments(step) {
                            // the bound before the move: on the grid, somewhere below the floor
                            let old = (floor - a - 3 * step).max(0);
                            let b = moved_bound(old, floor);
                            assert!(b >= floor);
                            let left = top - floor;
                            let (served, last) = drain(b, b, step, top, &mut rng);
                            assert_eq!(served, left, "nodes {} index {} step {step} above {above} old {old}", s.nodes, s.index);
                            assert_eq!(last, top.max(floor));
                            cases += 1;
                        }
                    }
                }
            }
        }
        assert!(cases > 100_000, "{cases} cases");
    }

    #[test]
    fn placement_is_within_range_and_spreads() {
        let mut counts = [0usize; 16];
        for s in 0..16_000i64 {
            let p = partition_of(7, s, 16);
            counts[p] += 1;
            assert!(set_of(7, s * 1000 + 3, false, 100) < 100);
        }
        assert!(counts.iter().all(|&c| c > 700), "{counts:?}");
        assert_eq!(partition_of(1, 5, 0), 0);
        assert_eq!(set_of(1, 5, true, 1), 0);
    }
}
