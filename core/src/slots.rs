//! Segment stride slots: a tag's value space cut into `slots` arithmetic progressions that never
//! meet, so that whole progressions (slots) can move between nodes without renumbering.
//!
//! * Chunk `c` of slot `s` (of `slots` slots, `unit` values per chunk, from `start`) covers
//!   `[start + (c*slots + s)*unit, … + unit)`. Slot `s`'s chunks are `slots*unit` apart, so a
//!   value belongs to exactly one (slot, chunk): [`locate`] is the inverse of [`chunk_start`].
//! * The layout of `nodes => N, node_index => k` is the special case `slots = N` where node `k`
//!   owns slot `k` alone: chunk `c` of node `k` is `start + (c*N + k)*unit`, the same number,
//!   so tags created before slots existed keep every value ([`legacy_slot`]).
//! * A node owning several slots reserves from the one whose next chunk is the lowest
//!   ([`pick_least_used`]): with one chunk per reservation and slots at equal heights the values
//!   a node hands out increase node-wide, and a slot never goes backwards (its durable mark only
//!   grows).

/// The first value of chunk `c` of slot `s`, or `None` outside bigint or outside the layout.
pub fn chunk_start(start: i64, unit: i64, slots: i64, slot: i64, chunk: i64) -> Option<i64> {
    if unit <= 0 || slots <= 0 || !(0..slots).contains(&slot) || chunk < 0 {
        return None;
    }
    let v = start as i128 + (chunk as i128 * slots as i128 + slot as i128) * unit as i128;
    let end = v + unit as i128 - 1;
    (end <= i64::MAX as i128).then_some(v as i64)
}

/// The (slot, chunk) that `value` belongs to, or `None` below `start`.
pub fn locate(start: i64, unit: i64, slots: i64, value: i64) -> Option<(i64, i64)> {
    if unit <= 0 || slots <= 0 || value < start {
        return None;
    }
    let n = (value as i128 - start as i128) / unit as i128; // chunk number, all slots together
    Some(((n % slots as i128) as i64, (n / slots as i128) as i64))
}

/// The slot layout of a tag made with `nodes => N, node_index => k`: `N` slots, node `k` owns
/// slot `k`.
pub fn legacy_slot(nodes: i64, node_index: i64) -> (i64, i64) {
    (nodes, node_index)
}

/// The slot to reserve from next: among owned slots `(slot, next chunk start)`, the lowest next
/// chunk start strictly above `above` (the largest value the node installed), else the lowest
/// of all (the caller moves it above `above` first). Ties go to the lower slot. `None` when the
/// node owns no slot.
pub fn pick_least_used(owned: &[(i64, i64)], above: Option<i64>) -> Option<(i64, i64)> {
    let ok = |n: i64| above.is_none_or(|a| n > a);
    owned
        .iter()
        .copied()
        .filter(|&(_, n)| ok(n))
        .min_by_key(|&(s, n)| (n, s))
        .or_else(|| owned.iter().copied().min_by_key(|&(s, n)| (n, s)))
}

/// The largest value of slot `slot` handed out or reserved, given its last reserved chunk
/// start: the chunk's last value.
pub fn mark_of_chunk(chunk_start: i64, unit: i64) -> i64 {
    chunk_start.saturating_add(unit - 1)
}

/// Whether a hand-over's `mark` may be adopted: it must not be lower than what the adopting
/// node can see of that slot (`seen`, e.g. its own durable mark of it), and must lie in the
/// slot (or be the value just below the slot's first chunk: nothing issued yet).
pub fn mark_acceptable(start: i64, unit: i64, slots: i64, slot: i64, mark: i64, seen: Option<i64>) -> bool {
    if seen.is_some_and(|s| mark < s) {
        return false;
    }
    let below_first = chunk_start(start, unit, slots, slot, 0).map(|f| f - 1);
    Some(mark) == below_first || locate(start, unit, slots, mark).is_some_and(|(s, _)| s == slot)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::segment::chunk_at_or_above;

    #[test]
    fn chunk_values_of_twelve_slots() {
        // start 1, unit 10, 12 slots: slot 0 at 1, 121, 241…; slot 5 at 51, 171…
        assert_eq!(chunk_start(1, 10, 12, 0, 0), Some(1));
        assert_eq!(chunk_start(1, 10, 12, 0, 1), Some(121));
        assert_eq!(chunk_start(1, 10, 12, 5, 0), Some(51));
        assert_eq!(chunk_start(1, 10, 12, 5, 1), Some(171));
        assert_eq!(chunk_start(1, 10, 12, 12, 0), None);
        assert_eq!(chunk_start(1, 10, 12, -1, 0), None);
        assert_eq!(chunk_start(i64::MAX - 5, 10, 12, 0, 0), None);
    }

    #[test]
    fn no_two_slots_ever_meet() {
        for &(start, unit, slots) in &[(1i64, 1i64, 12i64), (1, 10, 12), (-500, 7, 64), (0, 1000, 3)] {
            let mut seen = std::collections::HashMap::new();
            for s in 0..slots {
                for c in 0..200 {
                    let first = chunk_start(start, unit, slots, s, c).unwrap();
                    for v in first..first + unit {
                        assert_eq!(seen.insert(v, s), None, "value {v} in two slots");
                        assert_eq!(locate(start, unit, slots, v), Some((s, c)));
                    }
                }
            }
            // together they cover everything from start up, without holes
            let n = (slots * 200 * unit) as usize;
            assert_eq!(seen.len(), n);
            assert!((start..start + n as i64).all(|v| seen.contains_key(&v)));
        }
    }

    /// The old node layout, as it was computed: the backing sequence of node k starts at
    /// `start + k*unit` (origin) and goes up by `nodes*unit`; its i-th nextval is chunk i.
    fn old_chunk(start: i64, unit: i64, nodes: i64, k: i64, i: i64) -> i64 {
        let origin = start + k * unit;
        origin + i * nodes * unit
    }

    #[test]
    fn node_layout_is_one_slot_per_node_over_many_values() {
        let mut checked = 0u64;
        for &start in &[1i64, 0, -1000, 123_456_789, 1 << 40] {
            for &unit in &[1i64, 3, 10, 1000, 65_536] {
                for nodes in 1..=17i64 {
                    for k in 0..nodes {
                        let (slots, slot) = legacy_slot(nodes, k);
                        for i in (0..500i64).chain([10_000, 1_000_000]) {
                            let old = old_chunk(start, unit, nodes, k, i);
                            assert_eq!(chunk_start(start, unit, slots, slot, i), Some(old));
                            // and the old forward-only rounding lands on the same chunks
                            assert_eq!(
                                chunk_at_or_above(start + k * unit, nodes * unit, old),
                                chunk_start(start, unit, slots, slot, i)
                            );
                            // every value of the old chunk lies in the node's slot
                            for v in [old, old + unit - 1] {
                                assert_eq!(locate(start, unit, slots, v), Some((slot, i)));
                            }
                            checked += 1;
                        }
                    }
                }
            }
        }
        assert!(checked > 1_000_000, "{checked}");
    }

    #[test]
    fn least_used_slot_first() {
        assert_eq!(pick_least_used(&[], None), None);
        assert_eq!(pick_least_used(&[(3, 31), (1, 11), (7, 71)], None), Some((1, 11)));
        assert_eq!(pick_least_used(&[(3, 31), (1, 11), (7, 71)], Some(20)), Some((3, 31)));
        // all at or below what was installed: the lowest, to be moved up by the caller
        assert_eq!(pick_least_used(&[(3, 31), (1, 11)], Some(100)), Some((1, 11)));
        assert_eq!(pick_least_used(&[(4, 50), (2, 50)], None), Some((2, 50)));
    }

    #[test]
    fn least_used_first_keeps_a_node_increasing_and_each_slot_increasing() {
        // node owns slots 2, 5, 9 of 12 (unit 10): reserve one chunk at a time
        let (start, unit, slots) = (1i64, 10i64, 12i64);
        let mut next: Vec<(i64, i64)> =
            [2, 5, 9].iter().map(|&s| (s, chunk_start(start, unit, slots, s, 0).unwrap())).collect();
        let mut high = None;
        let mut last_of_slot = std::collections::HashMap::new();
        for _ in 0..3000 {
            let (s, c) = pick_least_used(&next, high).unwrap();
            assert!(high.is_none_or(|h| c > h), "node-wide increasing");
            assert!(last_of_slot.get(&s).is_none_or(|&l| c > l));
            last_of_slot.insert(s, c);
            high = Some(mark_of_chunk(c, unit));
            for e in next.iter_mut().filter(|e| e.0 == s) {
                e.1 += slots * unit;
            }
        }
    }

    #[test]
    fn adopting_needs_a_mark_no_lower_than_seen() {
        // slot 4 of 12, unit 10, start 1: chunks at 41, 161, …
        assert!(mark_acceptable(1, 10, 12, 4, 170, Some(50)));
        assert!(!mark_acceptable(1, 10, 12, 4, 50, Some(170)), "stale mark");
        assert!(mark_acceptable(1, 10, 12, 4, 170, Some(170)));
        assert!(!mark_acceptable(1, 10, 12, 4, 60, None), "60 is in slot 5");
        assert!(mark_acceptable(1, 10, 12, 4, 40, None), "nothing issued: just below 41");
        assert!(!mark_acceptable(1, 10, 12, 4, 0, None));
        assert!(!mark_acceptable(1, 10, 12, 4, 40, Some(50)), "nothing issued, but 50 was seen");
    }
}
