//! Slot ownership through the lease registry: the state machine of a registry row and the
//! ceiling arithmetic, without PostgreSQL.
//!
//! Safety argument (fencing by a registry ceiling). The registry keeps one row per (tag, slot):
//! its owner (a leased worker id and the token of the server that took it), a `ceiling` and a
//! `floor` counted in *chunks of the slot* (chunk `c` of slot `s` is
//! `start + (c*slots + s)*unit ..`, see [`crate::slots`]), and a state: held, moving to worker
//! id X, released.
//!
//! 1. A node hands out chunk `c` of a slot only if `floor <= c < ceiling` as its lease worker
//!    last *read back from the registry after commit*: the worker raises `ceiling` with an
//!    UPDATE that requires the row to be held by its worker id *and token* and its worker id
//!    lease to be valid (same token, not released, `lease_until` in the future) by the
//!    registry's clock; only after that statement committed does it publish the new ceiling in
//!    shared memory. So every chunk a node ever hands out from a slot lies below the ceiling
//!    the registry has recorded for it while that node was the owner.
//! 2. A node takes a row over (a move to it, a restart of the owner) in one UPDATE that sets
//!    `floor = ceiling`, row-locked against the owner's raise: the owner's raise either
//!    committed before (the new floor is above it) or finds the row no longer its own (it
//!    raises nothing). The taker moves its own backing sequence of the slot to chunk `floor`
//!    or above before it hands out a value of the slot. Chunks of the old owner are `< floor`,
//!    of the new one `>= floor`: no value twice, whatever the timing, the clocks, or a crash
//!    (a crash of the old owner only costs the unused chunks below its ceiling: a gap).
//! 3. Serving only while holding (not needed for 1-2, but promised): the old owner stops
//!    before the new one starts. A move marks the row `moving`; the owner's worker drops the
//!    slot from its shared table (and the tag's cached values) *first*, then marks the row
//!    released, and only a released row — or one whose owner's worker id lease has ended by
//!    the registry's clock, which the owner's own conservative validity ends before — is taken.
//!    Every value a node hands out of a registry-owned tag checks the node's slot validity, which
//!    never outlasts the lease validity of the round that read the rows.
//!
//! Without a registry (explicit `segment_slot_release`/`segment_slot_adopt`), none of this
//! applies: the operator carries the mark.

/// Chunks a ceiling is raised by beyond what a node asks for: the most a crash of the owner
/// skips (a gap) per slot, and how far a node can go between two registry round trips.
pub const HEADROOM_CHUNKS: i64 = 256;

/// A row's state in the registry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RowState {
    Held,
    Moving,
    Released,
}

impl RowState {
    pub fn parse(s: &str) -> Option<RowState> {
        match s {
            "held" => Some(RowState::Held),
            "moving" => Some(RowState::Moving),
            "released" => Some(RowState::Released),
            _ => None,
        }
    }
}

/// A registry row as a node's lease worker reads it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Row {
    pub owner: i64,
    /// The token of the server that took the row (None: assigned, never taken).
    pub owner_token: Option<i64>,
    pub state: RowState,
    pub move_to: Option<i64>,
    pub ceiling: i64,
    pub floor: i64,
    /// The owner's worker id lease under `owner_token` has ended (released, expired by the
    /// registry's clock, or the id is leased under another token now).
    pub owner_lease_ended: bool,
}

/// What this node's worker (worker id `me`, server token `token`) does with a row.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// Ours and held: serve chunks in `[floor, ceiling)`.
    Serve,
    /// Ours, being moved away: stop serving (locally, first), then mark it released.
    Release,
    /// Take it (`floor = ceiling`): assigned to us and never taken by this server (a restart,
    /// or a first assignment), or moved to us and released or left by an ended lease.
    Take,
    /// Not ours, or not yet.
    Ignore,
}

pub fn action(me: i64, token: i64, r: &Row) -> Action {
    let ours = r.owner == me;
    let this_server = ours && r.owner_token == Some(token);
    match r.state {
        RowState::Held if this_server => Action::Serve,
        // Another server with our worker id took it before (our own earlier start: the worker
        // id lease is ours now, so that server has stopped), or nobody did yet.
        RowState::Held if ours => Action::Take,
        RowState::Moving if this_server => Action::Release,
        // Moving away from our worker id but taken by an earlier server: nothing of ours serves
        // it, so it may be released at once.
        RowState::Moving if ours && r.move_to != Some(me) => Action::Release,
        RowState::Moving | RowState::Released
            if r.move_to == Some(me)
                && (r.state == RowState::Released || r.owner_lease_ended || (ours && !this_server)) =>
        {
            Action::Take
        }
        _ => Action::Ignore,
    }
}

/// The ceiling a worker asks for when backends want chunks up to `want` (exclusive) and the
/// registry has `ceiling`: None when the headroom left is at least half of [`HEADROOM_CHUNKS`].
pub fn raised_ceiling(ceiling: i64, want: i64) -> Option<i64> {
    let need = want.max(0);
    (need.saturating_add(HEADROOM_CHUNKS / 2) > ceiling)
        .then(|| ceiling.max(need.saturating_add(HEADROOM_CHUNKS)))
}

/// Whether a backend may reserve chunks `first .. end` (exclusive) of a slot served in
/// `[floor, ceiling)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Admit {
    /// Within the ceiling, with room left.
    Go,
    /// Within the ceiling, but less than half the headroom is left: ask the worker for more.
    GoAndAsk,
    /// Beyond the ceiling: ask the worker and wait.
    Wait,
    /// Below the floor: the backing sequence must first be moved to `floor`.
    BelowFloor,
}

pub fn admit(first: i64, end: i64, floor: i64, ceiling: i64) -> Admit {
    if first < floor {
        Admit::BelowFloor
    } else if end > ceiling {
        Admit::Wait
    } else if end.saturating_add(HEADROOM_CHUNKS / 2) > ceiling {
        Admit::GoAndAsk
    } else {
        Admit::Go
    }
}

/// Whether chunks reserved (their indexes in the slot) may be handed out: every one within
/// `[floor, ceiling)`.
pub fn all_within(chunks: &[i64], floor: i64, ceiling: i64) -> bool {
    !chunks.is_empty() && chunks.iter().all(|&c| floor <= c && c < ceiling)
}

/// The index of the chunk starting at `chunk_start` in its slot (origin: the slot's first
/// value; stride: slots * unit). None when it is not a chunk start of that slot.
pub fn chunk_index(origin: i64, stride: i64, chunk_start: i64) -> Option<i64> {
    if stride <= 0 || chunk_start < origin {
        return None;
    }
    let d = chunk_start as i128 - origin as i128;
    (d % stride as i128 == 0).then_some((d / stride as i128) as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(owner: i64, token: Option<i64>, state: RowState, move_to: Option<i64>, ended: bool) -> Row {
        Row { owner, owner_token: token, state, move_to, ceiling: 10, floor: 0, owner_lease_ended: ended }
    }

    #[test]
    fn actions_of_the_state_machine() {
        use Action::*;
        use RowState::*;
        // ours, this server
        assert_eq!(action(1, 77, &row(1, Some(77), Held, None, false)), Serve);
        assert_eq!(action(1, 77, &row(1, Some(77), Moving, Some(2), false)), Release);
        // assigned, never taken; or taken by our previous start
        assert_eq!(action(1, 77, &row(1, None, Held, None, true)), Take);
        assert_eq!(action(1, 77, &row(1, Some(5), Held, None, true)), Take);
        // moving away from our previous start: released at once
        assert_eq!(action(1, 77, &row(1, Some(5), Moving, Some(2), true)), Release);
        // the receiving side
        assert_eq!(action(2, 88, &row(1, Some(77), Moving, Some(2), false)), Ignore, "owner still live");
        assert_eq!(action(2, 88, &row(1, Some(77), Moving, Some(2), true)), Take, "owner's lease ended");
        assert_eq!(action(2, 88, &row(1, Some(77), Released, Some(2), false)), Take);
        assert_eq!(action(2, 88, &row(1, None, Moving, Some(2), true)), Take);
        // others
        assert_eq!(action(3, 99, &row(1, Some(77), Moving, Some(2), true)), Ignore);
        assert_eq!(action(3, 99, &row(1, Some(77), Held, None, true)), Ignore);
        assert_eq!(action(1, 77, &row(1, Some(77), Released, Some(2), false)), Ignore);
        // a move back to its own owner's earlier start
        assert_eq!(action(1, 77, &row(1, Some(5), Moving, Some(1), true)), Take);
    }

    /// The invariant over random interleavings: two owners of one slot, one moving it to the
    /// other; the chunks each hands out never meet.
    #[test]
    fn taker_continues_above_everything_the_owner_could_hand_out() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut rnd = |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        };
        for _ in 0..2000 {
            // registry row
            let (mut ceiling, mut floor) = (0i64, 0i64);
            // the owner: 0 (A) or 1 (B); each node's published [floor, ceiling) and its next chunk
            let mut owner = 0;
            let mut published = [Some((0i64, 0i64)), None];
            let mut next = [0i64, 0i64];
            let mut issued: Vec<(usize, i64)> = Vec::new();
            for _ in 0..200 {
                let who = rnd(2) as usize;
                match rnd(4) {
                    0 => {
                        // raise by the owner's worker (fenced), then publish
                        if owner == who {
                            if let Some(c) = raised_ceiling(ceiling, next[who] + 1) {
                                ceiling = c;
                                published[who] = Some((floor, ceiling));
                            }
                        }
                    }
                    1 => {
                        // hand over: taker sets floor = ceiling, publishes; old owner unpublishes
                        // at some point (possibly never: a dead node keeps its memory)
                        let taker = 1 - owner;
                        owner = taker;
                        floor = ceiling;
                        published[taker] = Some((floor, ceiling));
                        if rnd(2) == 0 {
                            published[1 - taker] = None;
                        }
                    }
                    _ => {
                        if let Some((f, c)) = published[who] {
                            if next[who] < f {
                                next[who] = f; // setval up
                            }
                            if admit(next[who], next[who] + 1, f, c) != Admit::Wait
                                && all_within(&[next[who]], f, c)
                            {
                                issued.push((who, next[who]));
                            }
                            next[who] += 1;
                        }
                    }
                }
            }
            let mut seen = std::collections::HashSet::new();
            for (_, c) in &issued {
                assert!(seen.insert(*c), "chunk {c} handed out twice");
            }
        }
    }

    #[test]
    fn ceiling_raises_by_the_headroom_only_when_needed() {
        assert_eq!(raised_ceiling(0, 0), Some(HEADROOM_CHUNKS));
        assert_eq!(raised_ceiling(1000, 10), None);
        assert_eq!(
            raised_ceiling(1000, 1000 - HEADROOM_CHUNKS / 2 + 1),
            Some(1000 + HEADROOM_CHUNKS / 2 + 1)
        );
        assert_eq!(raised_ceiling(1000, 5000), Some(5000 + HEADROOM_CHUNKS));
        assert_eq!(raised_ceiling(10, i64::MAX), Some(i64::MAX));
    }

    #[test]
    fn admission() {
        assert_eq!(admit(0, 1, 0, 1000), Admit::Go);
        assert_eq!(admit(5, 6, 10, 1000), Admit::BelowFloor);
        assert_eq!(admit(999, 1000, 0, 1000), Admit::GoAndAsk);
        assert_eq!(admit(1000, 1001, 0, 1000), Admit::Wait);
        assert!(all_within(&[3, 4], 3, 5));
        assert!(!all_within(&[3, 5], 3, 5));
        assert!(!all_within(&[2], 3, 5));
        assert!(!all_within(&[], 3, 5));
    }

    #[test]
    fn chunk_indexes() {
        assert_eq!(chunk_index(51, 120, 51), Some(0));
        assert_eq!(chunk_index(51, 120, 171), Some(1));
        assert_eq!(chunk_index(51, 120, 170), None);
        assert_eq!(chunk_index(51, 120, 1), None);
    }
}
