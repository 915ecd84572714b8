//! Segment sequences (Meituan Leaf "segment" mode): pure arithmetic, no PostgreSQL.
//!
//! * **Stride layout.** A tag's value space is cut into *chunks* of `unit` values. With `nodes`
//!   instances, chunk `i` of node `k` covers `[start + (i*nodes + k)*unit, ... + unit)`: the
//!   durable store hands out chunk starts `start + k*unit`, `+ nodes*unit`, … (a sequence with
//!   `INCREMENT BY nodes*unit`), so nodes never overlap and never talk to each other.
//! * **Segment.** What one reservation covers: `chunks` consecutive chunks of one node (contiguous
//!   values when `nodes == 1`, otherwise interleaved with the other nodes' chunks).
//! * **Adaptive step.** The step is `multiple * unit`; the unit never changes (so nodes stay
//!   disjoint), only the multiple doubles or halves by Leaf's rule ([`next_multiple`]).
//! * **Double buffer.** [`Buffers`]: the current segment with a cursor and the next reserved
//!   segment. A refill is due once [`REFILL_PERCENT`] of the current segment is used; whoever
//!   crosses the threshold reserves the next segment (outside any lock) and installs it.

/// Leaf loads the next segment when this share of the current one is used.
pub const REFILL_PERCENT: i64 = 10;

/// One reserved segment: `chunks` chunks of `unit` values, `stride` apart, from `first`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
#[repr(C)]
pub struct Segment {
    pub first: i64,
    pub chunks: i64,
    pub unit: i64,
    pub stride: i64,
}

impl Segment {
    pub fn len(&self) -> i64 {
        self.chunks * self.unit
    }
    pub fn is_empty(&self) -> bool {
        self.chunks <= 0
    }
    /// The `k`-th value of the segment (`0 <= k < len`).
    #[inline]
    pub fn value(&self, k: i64) -> i64 {
        // one chunk (a fixed step: every segment of a strided or slotted tag) or contiguous
        // chunks: no division on the hot path
        if self.chunks == 1 || self.stride == self.unit {
            self.first + k
        } else {
            self.first + (k / self.unit) * self.stride + k % self.unit
        }
    }
    /// The largest value of the segment.
    pub fn last(&self) -> i64 {
        self.value(self.len() - 1)
    }
    /// Builds a segment from the chunk starts one reservation returned, in order. Only the last
    /// run of consecutive chunks (`stride` apart) is kept: a concurrent reservation may have taken
    /// chunks in between, and what is dropped is only a gap. `None` when the chunks would overflow.
    pub fn from_chunks(starts: &[i64], unit: i64, stride: i64) -> Option<Segment> {
        let last = *starts.last()?;
        let mut n = 1;
        for w in starts.windows(2).rev() {
            if w[1].checked_sub(w[0]) == Some(stride) {
                n += 1;
            } else {
                break;
            }
        }
        last.checked_add(unit - 1)?;
        Some(Segment { first: last - (n - 1) * stride, chunks: n, unit, stride })
    }
}

/// Leaf's adaptive rule: a segment that lasted less than the target doubles the next step's
/// multiple, one that lasted more than twice the target halves it, within `[min_m, max_m]`.
pub fn next_multiple(m: i64, lasted_ms: i64, target_ms: i64, min_m: i64, max_m: i64) -> i64 {
    let m = if target_ms <= 0 {
        m
    } else if lasted_ms < target_ms {
        m.saturating_mul(2)
    } else if lasted_ms > target_ms.saturating_mul(2) {
        m / 2
    } else {
        m
    };
    m.clamp(min_m.max(1), max_m.max(min_m.max(1)))
}

/// The number of values of a segment after which its successor is reserved.
pub fn refill_threshold(len: i64) -> i64 {
    ((len * REFILL_PERCENT + 99) / 100).clamp(1, len.max(1))
}

/// First chunk start of node `k` at or above `value` (for the forward-only set), or `None` on
/// overflow. Chunk starts of node k are `origin + j*stride` with `origin = start + k*unit`.
pub fn chunk_at_or_above(origin: i64, stride: i64, value: i64) -> Option<i64> {
    if value <= origin {
        return Some(origin);
    }
    let d = (value as i128) - (origin as i128);
    let j = (d + stride as i128 - 1) / stride as i128;
    i64::try_from(origin as i128 + j * stride as i128).ok()
}

/// What [`Buffers::take`] did.
#[derive(Debug, PartialEq, Eq)]
pub enum Take {
    /// A value; `refill_due` when the caller should reserve the next segment now.
    Value { value: i64, refill_due: bool },
    /// Both buffers are used up: the caller must reserve synchronously.
    Empty,
}

/// The double buffer of one tag (kept in shared memory, changed only under the tag's lock).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(C)]
pub struct Buffers {
    pub cur: Segment,
    /// Values of `cur` handed out so far.
    pub taken: i64,
    pub next: Segment,
    /// The largest value ever installed (handed out or not): new segments must start above it.
    pub high: i64,
    /// Some segment was ever installed (`high` is meaningful).
    pub primed: bool,
}

/// What [`Buffers::install`] did with a reserved segment.
#[derive(Debug, PartialEq, Eq, Clone, Copy)]
pub enum Installed {
    Current,
    Next,
    /// Not above what is installed already, or a next segment is already waiting: dropped.
    Discarded,
}

impl Buffers {
    /// Hands out the next value, rotating to the next segment when the current one is used up.
    #[inline]
    pub fn take(&mut self) -> Take {
        if self.taken >= self.cur.len() {
            if self.next.is_empty() {
                return Take::Empty;
            }
            self.cur = self.next;
            self.next = Segment::default();
            self.taken = 0;
        }
        let value = self.cur.value(self.taken);
        self.taken += 1;
        let refill_due = self.next.is_empty() && self.taken == refill_threshold(self.cur.len());
        Take::Value { value, refill_due }
    }

    /// The next segment is missing and the current one is past its refill threshold (a refill
    /// that was due could not happen, e.g. the reserving backend failed).
    pub fn refill_overdue(&self) -> bool {
        self.next.is_empty() && self.taken >= refill_threshold(self.cur.len())
    }

    /// Installs a reserved segment: as the current one when both buffers are used up, else as
    /// the next one when that is free. Only a segment entirely above everything installed before
    /// is used, so values stay strictly increasing whatever order reservations arrive in.
    pub fn install(&mut self, seg: Segment) -> Installed {
        if seg.is_empty() || (self.primed && seg.first <= self.high) {
            return Installed::Discarded;
        }
        let how = if self.taken >= self.cur.len() && self.next.is_empty() {
            self.cur = seg;
            self.taken = 0;
            Installed::Current
        } else if self.next.is_empty() {
            self.next = seg;
            Installed::Next
        } else {
            return Installed::Discarded;
        };
        self.high = seg.last();
        self.primed = true;
        how
    }

    /// Installs a segment of one stride slot of a slotted tag: as [`Buffers::install`], except
    /// that the segment need only lie above everything installed before *from the same slot*
    /// (`slot_high`, the largest value of that slot installed so far, `i64::MIN` for none):
    /// slots are disjoint, so values stay unique node-wide and increasing within each slot,
    /// whatever order reservations of different slots arrive in.
    pub fn install_in_slot(&mut self, seg: Segment, slot_high: &mut i64) -> Installed {
        if seg.is_empty() || seg.first <= *slot_high {
            return Installed::Discarded;
        }
        let how = if self.taken >= self.cur.len() && self.next.is_empty() {
            self.cur = seg;
            self.taken = 0;
            Installed::Current
        } else if self.next.is_empty() {
            self.next = seg;
            Installed::Next
        } else {
            return Installed::Discarded;
        };
        *slot_high = seg.last();
        self.high = if self.primed { self.high.max(seg.last()) } else { seg.last() };
        self.primed = true;
        how
    }

    /// Values left in the current segment.
    pub fn remaining(&self) -> i64 {
        (self.cur.len() - self.taken).max(0)
    }

    /// The next value `take` would hand out from the current segment, if any.
    pub fn cursor(&self) -> Option<i64> {
        (self.taken < self.cur.len()).then(|| self.cur.value(self.taken))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seg(first: i64, chunks: i64, unit: i64, stride: i64) -> Segment {
        Segment { first, chunks, unit, stride }
    }

    #[test]
    fn contiguous_segment_values() {
        let s = seg(1, 2, 10, 10);
        assert_eq!(s.len(), 20);
        assert_eq!((0..20).map(|k| s.value(k)).collect::<Vec<_>>(), (1..=20).collect::<Vec<_>>());
        assert_eq!(s.last(), 20);
    }

    #[test]
    fn strided_segments_of_two_nodes_are_disjoint_and_cover_everything() {
        // start 1, unit 5, nodes 2: node 0 chunks at 1, 11, 21…; node 1 at 6, 16, 26…
        let n0 = seg(1, 3, 5, 10);
        let n1 = seg(6, 3, 5, 10);
        let mut all: Vec<i64> = (0..15).map(|k| n0.value(k)).chain((0..15).map(|k| n1.value(k))).collect();
        let v0: Vec<i64> = (0..15).map(|k| n0.value(k)).collect();
        assert!(v0.windows(2).all(|w| w[0] < w[1]), "strictly increasing within a node");
        all.sort();
        assert_eq!(all, (1..=30).collect::<Vec<_>>());
    }

    #[test]
    fn from_chunks_keeps_last_consecutive_run() {
        assert_eq!(Segment::from_chunks(&[1, 11, 21], 5, 10), Some(seg(1, 3, 5, 10)));
        assert_eq!(Segment::from_chunks(&[1, 31, 41], 5, 10), Some(seg(31, 2, 5, 10)));
        assert_eq!(Segment::from_chunks(&[7], 5, 10), Some(seg(7, 1, 5, 10)));
        assert_eq!(Segment::from_chunks(&[], 5, 10), None);
        assert_eq!(Segment::from_chunks(&[i64::MAX - 2], 5, 10), None);
    }

    #[test]
    fn adaptive_rule_doubles_halves_and_clamps() {
        assert_eq!(next_multiple(4, 100, 1000, 1, 64), 8); // lasted < target
        assert_eq!(next_multiple(4, 1500, 1000, 1, 64), 4); // within [target, 2 target]
        assert_eq!(next_multiple(4, 2000, 1000, 1, 64), 4);
        assert_eq!(next_multiple(4, 2001, 1000, 1, 64), 2); // > 2 target
        assert_eq!(next_multiple(64, 1, 1000, 1, 64), 64); // capped
        assert_eq!(next_multiple(1, 99999, 1000, 1, 64), 1); // floored
        assert_eq!(next_multiple(4, 1, 0, 1, 64), 4); // no target: fixed
    }

    #[test]
    fn refill_threshold_is_ten_percent_at_least_one() {
        assert_eq!(refill_threshold(1000), 100);
        assert_eq!(refill_threshold(5), 1);
        assert_eq!(refill_threshold(1), 1);
        assert_eq!(refill_threshold(15), 2);
    }

    #[test]
    fn chunk_at_or_above_respects_node_origin() {
        assert_eq!(chunk_at_or_above(6, 10, 0), Some(6));
        assert_eq!(chunk_at_or_above(6, 10, 6), Some(6));
        assert_eq!(chunk_at_or_above(6, 10, 7), Some(16));
        assert_eq!(chunk_at_or_above(6, 10, 100), Some(106));
        assert_eq!(chunk_at_or_above(0, 10, i64::MAX), None);
    }

    #[test]
    fn double_buffer_state_machine() {
        let mut b = Buffers::default();
        assert_eq!(b.take(), Take::Empty);
        assert_eq!(b.install(seg(1, 1, 10, 10)), Installed::Current);
        assert_eq!(b.take(), Take::Value { value: 1, refill_due: true }); // 10% of 10 = 1
        assert_eq!(b.take(), Take::Value { value: 2, refill_due: false });
        assert_eq!(b.install(seg(11, 1, 10, 10)), Installed::Next);
        assert_eq!(b.install(seg(21, 1, 10, 10)), Installed::Discarded, "next already waiting");
        for v in 3..=10 {
            assert_eq!(b.take(), Take::Value { value: v, refill_due: false });
        }
        assert_eq!(b.take(), Take::Value { value: 11, refill_due: true }, "rotates, refill due again");
        for _ in 12..=20 {
            assert!(matches!(b.take(), Take::Value { .. }));
        }
        assert_eq!(b.take(), Take::Empty);
        assert!(b.refill_overdue());
    }

    #[test]
    fn install_never_goes_backwards() {
        let mut b = Buffers::default();
        b.install(seg(101, 1, 10, 10));
        assert!(matches!(b.take(), Take::Value { value: 101, .. }));
        // A reservation that lost the race and returned a lower segment is dropped.
        assert_eq!(b.install(seg(91, 1, 10, 10)), Installed::Discarded);
        assert_eq!(b.install(seg(110, 1, 10, 10)), Installed::Discarded, "overlaps");
        assert_eq!(b.install(seg(111, 1, 10, 10)), Installed::Next);
    }

    #[test]
    fn slotted_install_guards_each_slot_not_the_node() {
        let mut b = Buffers::default();
        let (mut h0, mut h1) = (i64::MIN, i64::MIN);
        // 12 slots of unit 10 from 1: slot 1's chunk 1 (131..140) first, then slot 0's lower
        // chunk 0 (1..10): both accepted
        assert_eq!(b.install_in_slot(seg(131, 1, 10, 120), &mut h1), Installed::Current);
        assert_eq!(b.install_in_slot(seg(1, 1, 10, 120), &mut h0), Installed::Next);
        assert_eq!((h0, h1), (10, 140));
        for _ in 0..20 {
            assert!(matches!(b.take(), Take::Value { .. }));
        }
        // a late reservation of slot 1 below what slot 1 already installed: dropped
        assert_eq!(b.install_in_slot(seg(11, 1, 10, 120), &mut h1), Installed::Discarded);
        assert_eq!(b.install_in_slot(seg(251, 1, 10, 120), &mut h1), Installed::Current);
        assert_eq!(b.high, 260);
    }

    #[test]
    fn values_strictly_increase_across_many_segments() {
        let mut b = Buffers::default();
        let mut next_chunk = 1;
        let mut last = i64::MIN;
        for _ in 0..10_000 {
            match b.take() {
                Take::Value { value, refill_due } => {
                    assert!(value > last);
                    last = value;
                    if refill_due {
                        b.install(seg(next_chunk, 1, 7, 7));
                        next_chunk += 7;
                    }
                }
                Take::Empty => {
                    b.install(seg(next_chunk, 1, 7, 7));
                    next_chunk += 7;
                }
            }
        }
    }
}
