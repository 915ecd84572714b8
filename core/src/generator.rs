//! The snowflake clock policy, written once for tests and for the server.
//!
//! A generator's whole hot state is one 64-bit word, `(tick << sequence_bits) | sequence`: the
//! tick and sequence of the last id issued. [`next_id`] advances it with a compare-and-swap, so
//! any number of threads (or PostgreSQL backends, when the word lives in shared memory) can
//! share one [`WorkerState`] without a lock. The wall clock is injected through [`Clock`].
//!
//! Policy, per call:
//! * wall tick after the last tick → the new tick, sequence at its start value;
//! * same tick, or the wall clock behind the last tick (a step back, or the logical clock ran
//!   ahead after an exhaustion) → the last tick, sequence + 1;
//! * sequence exhausted → the next tick: the logical clock runs ahead of the wall clock.
//!
//! The logical clock may lead the wall clock by at most `max_drift_ms`. Beyond that the call
//! waits, if the wait needed is at most `max_wait_ms`, and otherwise fails: ids are never
//! duplicated and never decrease, whatever the clock does. Ticks at or beyond the durable
//! reservation (`reserved`) are only issued after the caller's reservation hook has extended it,
//! so that after a crash the generator restarts above every id it ever issued.

use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};

use crate::layout::{Layout, Parts};

/// The source of time. The server reads `CLOCK_REALTIME`; tests use a settable clock.
pub trait Clock {
    /// Milliseconds since the Unix epoch.
    fn now_ms(&self) -> i64;
    /// Blocks until `now_ms() >= target_ms` or about `max_ms` have elapsed, whichever comes
    /// first. Implementations may check for interrupts (a PostgreSQL query cancel).
    fn wait_until(&self, target_ms: i64, max_ms: i64);
}

/// How the sequence of a fresh tick starts (`pg_idgen.sequence_start`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SequenceStart {
    /// Always 0: the densest ids, but at low rates every id ends in zero bits.
    Zero,
    /// Cycle 0, 1, 2, … over the spread range, one step per tick (ShardingSphere's vibration).
    Vibrate,
    /// A random value in the spread range (Leaf).
    Random,
}

/// Policy knobs, read from the settings on every call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Policy {
    pub max_drift_ms: i64,
    pub max_wait_ms: i64,
    pub start: SequenceStart,
    /// How far ahead each durable reservation reaches (`pg_idgen.reserve_ms`).
    pub reserve_window_ms: i64,
}

/// Shared state of one worker id. `#[repr(C)]`, only atomics: it can live in shared memory.
#[repr(C)]
#[derive(Debug, Default)]
pub struct WorkerState {
    /// `(tick << sequence_bits) | sequence` of the last id issued.
    pub state: AtomicU64,
    /// Ticks below this value are covered by the durable reservation.
    pub reserved: AtomicU64,
    /// Vibration counter for [`SequenceStart::Vibrate`].
    pub vibrate: AtomicU64,
    /// Ids issued: counted by [`next_id`] and [`next_id_fenced`] per id, by the caller of
    /// [`next_id_uncounted`] (several at once).
    pub issued: AtomicU64,
    /// Ticks whose sequence ran out (each counted once, by whoever saw it first).
    pub exhaustions: AtomicU64,
    /// The latest exhausted tick counted in `exhaustions`.
    pub exhausted_tick: AtomicU64,
    pub waits: AtomicU64,
    pub steps_back: AtomicU64,
    /// Highest system-clock reading (ms) seen by any caller; a reading more than
    /// [`STEP_BACK_MIN_MS`] below it is a step back, after which it restarts from that reading.
    pub wall_high: AtomicI64,
    /// Clock reading at which the last step back was reported (rate-limits warnings).
    pub last_warning_ms: AtomicI64,
}

/// Smallest clock step back that is counted and reported. Smaller differences between the
/// readings of concurrent callers are scheduling noise (a caller preempted between reading the
/// clock and comparing); NTP steps the clock only for offsets above 128 ms.
pub const STEP_BACK_MIN_MS: i64 = 20;

/// A counted step back is reported at most this often.
pub const STEP_BACK_WARNING_INTERVAL_MS: i64 = 1000;

/// What the caller's process remembers between calls.
#[derive(Clone, Debug)]
pub struct LocalState {
    /// xorshift state for [`SequenceStart::Random`].
    pub rng: u64,
}

impl LocalState {
    pub fn new(seed: u64) -> LocalState {
        LocalState { rng: seed | 1 }
    }
    fn random(&mut self) -> u64 {
        let mut x = self.rng;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.rng = x;
        x
    }
}

/// Why no id could be issued.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GenError {
    /// The wall clock reads a time before the layout's epoch.
    ClockBeforeEpoch { now_ms: i64, epoch_ms: i64 },
    /// The next id would need a tick beyond the time field: the layout has run out of time.
    TimeOverflow { max_tick: u64 },
    /// The logical clock would lead the wall clock by more than the drift bound plus the wait.
    TooFarAhead { lead_ms: i64, max_drift_ms: i64, max_wait_ms: i64 },
    /// The fence of [`next_id_fenced`] refused the id whose time was fixed (a lease ended).
    Fenced { tick: u64 },
}

impl std::fmt::Display for GenError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            GenError::ClockBeforeEpoch { now_ms, epoch_ms } => write!(
                f,
                "the system clock ({now_ms} ms since 1970) is before the layout's epoch ({epoch_ms} ms)"
            ),
            GenError::TimeOverflow { max_tick } => write!(
                f,
                "the layout's time field is exhausted (tick {max_tick} reached); no more ids can be generated with this layout"
            ),
            GenError::TooFarAhead { lead_ms, max_drift_ms, max_wait_ms } => write!(
                f,
                "the id generator's clock is {lead_ms} ms ahead of the system clock, more than \
                 pg_idgen.max_drift_ms ({max_drift_ms}) plus pg_idgen.max_wait_ms ({max_wait_ms})"
            ),
            GenError::Fenced { tick } => {
                write!(f, "the worker id may no longer issue ids of tick {tick} (its lease ended)")
            }
        }
    }
}

impl std::error::Error for GenError {}

/// An issued id and what happened while issuing it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Issued {
    pub id: i64,
    pub parts: Parts,
    /// Set when this call detected a clock step back and should report it: how far back, in ms.
    pub step_back_ms: Option<i64>,
    /// Set when the reservation should be extended soon (the issued tick is in the last half
    /// of the reserved window); the caller may do it now without blocking others.
    pub reserve_soon: bool,
    /// The id is the first of its tick issued (a new tick, or the next one after an exhausted
    /// sequence), not the next sequence value of the last id's tick.
    pub new_tick: bool,
}

/// Tracks the highest clock reading of all callers; counts a step back once, by the caller whose
/// compare-and-swap moves the watermark down to its reading. Returns the step to report, if any.
fn observe_clock(ws: &WorkerState, now_ms: i64) -> Option<i64> {
    let high = ws.wall_high.load(Ordering::Relaxed);
    if now_ms > high {
        // Racing stores may leave a slightly lower value: harmless, the tolerance covers it.
        ws.wall_high.store(now_ms, Ordering::Relaxed);
        return None;
    }
    if high - now_ms < STEP_BACK_MIN_MS
        || ws.wall_high.compare_exchange(high, now_ms, Ordering::Relaxed, Ordering::Relaxed).is_err()
    {
        return None;
    }
    ws.steps_back.fetch_add(1, Ordering::Relaxed);
    let last = ws.last_warning_ms.load(Ordering::Relaxed);
    let due = last == 0 || last.abs_diff(now_ms) >= STEP_BACK_WARNING_INTERVAL_MS as u64;
    (due && ws.last_warning_ms.compare_exchange(last, now_ms, Ordering::Relaxed, Ordering::Relaxed).is_ok())
        .then_some(high - now_ms)
}

/// Width of the range sequence start values are drawn from: 2^(bits−6), at least 8 values
/// (fewer if the sequence field is narrower). 64 values for 12 bits: `id % 2^n` balances for
/// n ≤ 6, while a busy tick loses at most 1.5 % of its capacity to the start offset.
pub fn spread(sequence_bits: u32) -> u64 {
    1u64 << sequence_bits.saturating_sub(6).max(sequence_bits.min(3))
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    NewTick,
    SameTick,
    Exhausted,
}

fn advance(last: u64, now_tick: u64, start: u64, seq_bits: u32) -> (u64, u64, Kind) {
    let max_seq = (1u64 << seq_bits) - 1;
    let (last_tick, last_seq) = (last >> seq_bits, last & max_seq);
    if now_tick > last_tick {
        (now_tick, start, Kind::NewTick)
    } else if last_seq < max_seq {
        (last_tick, last_seq + 1, Kind::SameTick)
    } else {
        (last_tick + 1, start, Kind::Exhausted)
    }
}

/// The packed state just below tick `tick`: the next id issued is at `tick` or later.
pub fn state_before_tick(tick: u64, sequence_bits: u32) -> u64 {
    if tick == 0 {
        0
    } else {
        ((tick - 1) << sequence_bits) | ((1u64 << sequence_bits) - 1)
    }
}

/// Tick of a packed state.
pub fn state_tick(state: u64, sequence_bits: u32) -> u64 {
    state >> sequence_bits
}

/// Issues the next id of `worker` under `layout`. `reserve(tick)` is called (and the attempt
/// retried) when `tick` is not yet covered by `ws.reserved`; it must make a reservation that
/// covers `tick` durable and raise `ws.reserved`, or not return.
pub fn next_id<C: Clock>(
    ws: &WorkerState,
    layout: &Layout,
    worker: u64,
    policy: Policy,
    clock: &C,
    local: &mut LocalState,
    reserve: impl FnMut(u64),
) -> Result<Issued, GenError> {
    next_id_fenced(ws, layout, worker, policy, clock, local, reserve, |_| true)
}

/// [`next_id`] with a fence: `fence(tick)` is asked after the clock was read, the tick fixed and
/// its reservation made, immediately before the compare-and-swap that issues the id; when it
/// returns false no id is issued and the call fails with [`GenError::Fenced`]. Everything that
/// can block (reservations, waits for the clock, lost races) happens before it, and a lost
/// race asks it again: the fence sees every id at the last moment before it exists. Used for
/// worker id leases: an id is only issued while the lease is still valid after its time was
/// read.
#[allow(clippy::too_many_arguments)]
pub fn next_id_fenced<C: Clock>(
    ws: &WorkerState,
    layout: &Layout,
    worker: u64,
    policy: Policy,
    clock: &C,
    local: &mut LocalState,
    reserve: impl FnMut(u64),
    fence: impl FnMut(u64) -> bool,
) -> Result<Issued, GenError> {
    let issued = next_id_uncounted(ws, layout, worker, policy, clock, local, reserve, fence);
    if issued.is_ok() {
        ws.issued.fetch_add(1, Ordering::Relaxed);
    }
    issued
}

/// [`next_id_fenced`] without counting the id in `ws.issued`: the caller counts it, and may add
/// several at once (one atomic add per tick instead of one per id: the server counts in the
/// backend and adds the count when a call issues the first id of a tick, `Issued::new_tick`, and
/// at the end of each transaction). Everything else is the same.
#[allow(clippy::too_many_arguments)]
pub fn next_id_uncounted<C: Clock>(
    ws: &WorkerState,
    layout: &Layout,
    worker: u64,
    policy: Policy,
    clock: &C,
    local: &mut LocalState,
    mut reserve: impl FnMut(u64),
    mut fence: impl FnMut(u64) -> bool,
) -> Result<Issued, GenError> {
    let seq_bits = layout.sequence_bits;
    let mut step_back_ms = None;
    let mut waited_ms = 0i64;
    loop {
        let now_ms = clock.now_ms();
        if step_back_ms.is_none() {
            step_back_ms = observe_clock(ws, now_ms);
        }

        let now_tick = layout.unix_ms_to_tick(now_ms);
        if now_tick < 0 {
            return Err(GenError::ClockBeforeEpoch { now_ms, epoch_ms: layout.epoch_ms });
        }
        let now_tick = now_tick.min(u64::MAX as i128 >> 1) as u64;

        let start = match policy.start {
            SequenceStart::Zero => 0,
            SequenceStart::Vibrate => ws.vibrate.load(Ordering::Relaxed) % spread(seq_bits),
            SequenceStart::Random => local.random() % spread(seq_bits),
        };
        let last = ws.state.load(Ordering::Acquire);
        let (tick, seq, kind) = advance(last, now_tick, start, seq_bits);
        if kind == Kind::Exhausted && ws.exhausted_tick.fetch_max(tick - 1, Ordering::Relaxed) < tick - 1 {
            ws.exhaustions.fetch_add(1, Ordering::Relaxed);
        }
        if tick > layout.max_time() {
            return Err(GenError::TimeOverflow { max_tick: layout.max_time() });
        }
        // Lead of the logical clock over the wall clock, measured from the wall clock's exact
        // millisecond to the start of the tick to be issued.
        let lead_ms = (layout.tick_to_unix_ms(tick) - now_ms as i128).max(0) as i64;
        if lead_ms > policy.max_drift_ms {
            let excess = lead_ms - policy.max_drift_ms;
            if waited_ms + excess <= policy.max_wait_ms {
                let before = now_ms;
                clock.wait_until(now_ms + excess, policy.max_wait_ms - waited_ms);
                ws.waits.fetch_add(1, Ordering::Relaxed);
                waited_ms += (clock.now_ms() - before).max(1);
                continue;
            }
            return Err(GenError::TooFarAhead {
                lead_ms,
                max_drift_ms: policy.max_drift_ms,
                max_wait_ms: policy.max_wait_ms,
            });
        }
        let reserved = ws.reserved.load(Ordering::Acquire);
        if tick >= reserved {
            reserve(tick);
            continue;
        }
        let next = (tick << seq_bits) | seq;
        if !fence(tick) {
            return Err(GenError::Fenced { tick });
        }
        if ws.state.compare_exchange_weak(last, next, Ordering::AcqRel, Ordering::Relaxed).is_err() {
            continue;
        }
        if kind != Kind::SameTick {
            ws.vibrate.fetch_add(1, Ordering::Relaxed);
        }
        let parts = Parts { time: tick, worker, sequence: seq };
        // The id cannot fail to encode: tick ≤ max_time was checked, worker was checked by the
        // caller, and seq fits its field by construction.
        let id = layout.encode(parts).expect("checked parts always encode");
        // In the last half of the reserved window (ticks × unit ≤ window / 2, without dividing),
        // unless the reservation already reaches the end of the time field: it cannot grow, and
        // asking would make every call of the field's last half-window write the state file.
        let reserve_soon = reserved <= layout.max_time()
            && (reserved - tick).saturating_mul(layout.unit_ms as u64 * 2) <= policy.reserve_window_ms as u64;
        return Ok(Issued { id, parts, step_back_ms, reserve_soon, new_tick: kind != Kind::SameTick });
    }
}

/// One attempt of [`next_id_uncounted`] that neither waits, nor reserves, nor asks a fence: for a
/// caller without a fence (no lease), with the clock read by the caller (`now_ms`). It issues the
/// id [`next_id_uncounted`] would issue at that clock reading, or returns `None` having changed
/// nothing but the clock watermark (raised as every call raises it) when the call needs more
/// than the common case: the clock before the epoch or stepped back, an exhausted sequence, the
/// time field at its end, a lead beyond `max_drift_ms` (a wait), a tick not yet reserved, a
/// reservation due for its early extension, or a lost compare-and-swap. The caller then runs
/// [`next_id_uncounted`], which handles each of them. Never panics (the server calls it outside
/// its error handling); counts nothing (see [`next_id_uncounted`]).
#[inline(always)]
pub fn next_id_fast(
    ws: &WorkerState,
    layout: &Layout,
    worker: u64,
    policy: Policy,
    now_ms: i64,
    local: &mut LocalState,
) -> Option<Issued> {
    let seq_bits = layout.sequence_bits;
    let high = ws.wall_high.load(Ordering::Relaxed);
    if now_ms > high {
        ws.wall_high.store(now_ms, Ordering::Relaxed);
    } else if high - now_ms >= STEP_BACK_MIN_MS {
        return None; // a step back: counted and reported by the full path
    }
    let now_tick = layout.unix_ms_to_tick(now_ms);
    if now_tick < 0 {
        return None;
    }
    let now_tick = now_tick.min(u64::MAX as i128 >> 1) as u64;
    let start = match policy.start {
        SequenceStart::Zero => 0,
        SequenceStart::Vibrate => ws.vibrate.load(Ordering::Relaxed) % spread(seq_bits),
        SequenceStart::Random => local.random() % spread(seq_bits),
    };
    let last = ws.state.load(Ordering::Acquire);
    let (tick, seq, kind) = advance(last, now_tick, start, seq_bits);
    if kind == Kind::Exhausted || tick > layout.max_time() {
        return None;
    }
    let lead_ms = (layout.tick_to_unix_ms(tick) - now_ms as i128).max(0) as i64;
    if lead_ms > policy.max_drift_ms {
        return None;
    }
    let reserved = ws.reserved.load(Ordering::Acquire);
    if tick >= reserved
        || (reserved <= layout.max_time()
            && (reserved - tick).saturating_mul(layout.unit_ms as u64 * 2) <= policy.reserve_window_ms as u64)
    {
        return None;
    }
    let next = (tick << seq_bits) | seq;
    if ws.state.compare_exchange(last, next, Ordering::AcqRel, Ordering::Relaxed).is_err() {
        return None;
    }
    if kind != Kind::SameTick {
        ws.vibrate.fetch_add(1, Ordering::Relaxed);
    }
    let parts = Parts { time: tick, worker, sequence: seq };
    // Cannot fail (tick <= max_time checked, the worker by the caller, seq fits by
    // construction); were it to, the state has moved past an id nobody got: a gap, no duplicate.
    let id = layout.encode(parts).ok()?;
    Some(Issued { id, parts, step_back_ms: None, reserve_soon: false, new_tick: kind != Kind::SameTick })
}

/// The new reservation end for a reservation that must cover `tick`: `window_ms` of wall time
/// beyond the later of `tick` and the wall clock, capped just past the end of the time field.
pub fn reservation_end(layout: &Layout, tick: u64, now_ms: i64, window_ms: i64) -> u64 {
    let now_tick = layout.unix_ms_to_tick(now_ms).max(0) as u64;
    (tick.max(now_tick) + window_ticks(layout, window_ms) + 1).min(layout.max_time() + 1)
}

/// The Unix ms at or after which a server issues its first id after recovery (a promoted
/// standby, crash recovery), when it may not have replayed the old primary's last reservations
/// (an asynchronous standby that lagged).
///
/// Every id [`next_id`] issues lies in a tick that starts at most `max_drift_ms` after the wall
/// clock reading of that same call (the lead check is the last thing before the id exists, and
/// a restart behind the reservation or a clock step back only ever makes the call wait or fail,
/// never relaxes the check). The old primary's clock read at most `now_ms + skew_ms` when it
/// issued its last id, if the two clocks differ by at most `skew_ms` and the old primary
/// issued nothing after this server's `now_ms` (it was stopped before the promotion). So
/// every id it issued starts strictly before `now_ms + max_lead_ms + skew_ms + 1`, where
/// `max_lead_ms` is the largest `max_drift_ms` it ran with. Ids from the tick that starts at or
/// after the result are above all of them. Saturates instead of overflowing.
pub fn recovery_floor_ms(now_ms: i64, max_lead_ms: i64, skew_ms: i64) -> i64 {
    now_ms.saturating_add(max_lead_ms.max(0)).saturating_add(skew_ms.max(0)).saturating_add(1)
}

/// The wall clock reading from which a generator continuing at `floor_ms` issues ids within its
/// own `max_drift_ms`: the first calls after recovery wait for it, so that the promoted server's
/// ids keep the same bound (a later promotion of another server relies on it).
pub fn recovery_wait_until_ms(floor_ms: i64, max_drift_ms: i64) -> i64 {
    floor_ms.saturating_sub(max_drift_ms.max(0))
}

/// How far the sending server's clock was ahead of this server's (ms, negative when behind), from
/// one message of streaming replication: the sender's clock when it sent it (`send_us`) and this
/// server's when it received it (`receipt_us`), both PostgreSQL timestamps (µs). The message
/// travelled for a while between the two readings, so the result is the true difference **less**
/// that delay (network and the receiver's queue): never larger than the truth, and rounded up to
/// the millisecond so that rounding does not make it smaller. `None` for no message: no receipt
/// time yet (0), or the pair a WAL receiver sets to the same instant when it starts, before its
/// first message.
pub fn observed_sender_lead_ms(send_us: i64, receipt_us: i64) -> Option<i64> {
    if receipt_us == 0 || send_us == receipt_us {
        return None;
    }
    let d = send_us as i128 - receipt_us as i128;
    Some((d + 999).div_euclid(1000).clamp(i64::MIN as i128 + 1, i64::MAX as i128) as i64)
}

/// The sender's lead over this server's clock as the startup process samples it from the WAL
/// receiver: the largest observation of the last one or two periods of `PERIOD_MS` (each sample
/// underestimates by its message's delay, so the largest recent one is the closest; an old one
/// ages out, so a sender whose clock was corrected stops counting after two periods).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SenderLead {
    /// Largest lead observed in the current period (`i64::MIN`: none).
    pub current_ms: i64,
    /// Largest lead observed in the period before (`i64::MIN`: none).
    pub previous_ms: i64,
    /// This server's clock at the start of the current period.
    pub period_start_ms: i64,
}

impl SenderLead {
    pub const PERIOD_MS: i64 = 60_000;
    pub const NONE: SenderLead =
        SenderLead { current_ms: i64::MIN, previous_ms: i64::MIN, period_start_ms: i64::MIN };

    /// Adds an observation `lead_ms` made at this server's clock reading `at_ms`.
    pub fn observe(&mut self, lead_ms: i64, at_ms: i64) {
        if self.period_start_ms == i64::MIN || at_ms < self.period_start_ms {
            // first observation, or this server's clock stepped back: start over
            *self = SenderLead { current_ms: lead_ms, previous_ms: i64::MIN, period_start_ms: at_ms };
        } else if at_ms.saturating_sub(self.period_start_ms) >= Self::PERIOD_MS {
            let recent = at_ms.saturating_sub(self.period_start_ms) < 2 * Self::PERIOD_MS;
            self.previous_ms = if recent { self.current_ms } else { i64::MIN };
            self.current_ms = lead_ms;
            self.period_start_ms = at_ms;
        } else {
            self.current_ms = self.current_ms.max(lead_ms);
        }
    }

    /// The estimate: the largest recent observation, or the last period's when none is newer.
    pub fn lead_ms(&self) -> Option<i64> {
        let m = self.current_ms.max(self.previous_ms);
        (m != i64::MIN).then_some(m)
    }
}

/// [`recovery_floor_ms`] when the old primary's clock was observed (streaming replication) to be
/// `observed_lead_ms` ahead of this server's: its clock read at most `now_ms + observed + skew_ms`
/// when it issued its last id, `skew_ms` now covering the observation's error (the message's
/// delay) and any change since. A primary observed behind, or not observed (`None`: never
/// streamed since start), leaves today's rule: `now_ms + max_lead_ms + skew_ms + 1`.
pub fn recovery_floor_observed_ms(
    now_ms: i64,
    max_lead_ms: i64,
    skew_ms: i64,
    observed_lead_ms: Option<i64>,
) -> i64 {
    recovery_floor_ms(now_ms.saturating_add(observed_lead_ms.unwrap_or(0).max(0)), max_lead_ms, skew_ms)
}

/// The reservation window in ticks (at least one).
fn window_ticks(layout: &Layout, window_ms: i64) -> u64 {
    (window_ms.max(1) as u64).div_ceil(layout.unit_ms as u64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;
    use std::collections::HashSet;
    use std::sync::Arc;

    /// A clock the test sets; waiting moves it forward, as real time would.
    struct TestClock {
        now: Cell<i64>,
        waited: Cell<i64>,
    }
    impl TestClock {
        fn at(ms: i64) -> TestClock {
            TestClock { now: Cell::new(ms), waited: Cell::new(0) }
        }
        fn set(&self, ms: i64) {
            self.now.set(ms)
        }
        fn add(&self, ms: i64) {
            self.now.set(self.now.get() + ms)
        }
    }
    impl Clock for TestClock {
        fn now_ms(&self) -> i64 {
            self.now.get()
        }
        fn wait_until(&self, target_ms: i64, max_ms: i64) {
            let step = (target_ms - self.now.get()).clamp(0, max_ms);
            self.waited.set(self.waited.get() + step);
            self.add(step);
        }
    }

    struct RealClock;
    impl Clock for RealClock {
        fn now_ms(&self) -> i64 {
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as i64
        }
        fn wait_until(&self, target_ms: i64, max_ms: i64) {
            let deadline = self.now_ms() + max_ms;
            while self.now_ms() < target_ms.min(deadline) {
                std::hint::spin_loop();
            }
        }
    }

    const ZERO: Policy =
        Policy { max_drift_ms: 1000, max_wait_ms: 0, start: SequenceStart::Zero, reserve_window_ms: 1000 };

    /// A generator as the server runs it: shared state, a reservation hook that records the
    /// durable reservation the way the state file does.
    struct Gen {
        ws: WorkerState,
        layout: Layout,
        worker: u64,
        policy: Policy,
        local: LocalState,
        durable: Cell<u64>,
        reservations: Cell<u32>,
    }
    impl Gen {
        fn new(layout: &str, worker: u64, policy: Policy) -> Gen {
            Gen {
                ws: WorkerState::default(),
                layout: Layout::parse(layout).unwrap(),
                worker,
                policy,
                local: LocalState::new(7),
                durable: Cell::new(0),
                reservations: Cell::new(0),
            }
        }
        /// What a restart does: state just below the durable reservation.
        fn restarted(&self) -> Gen {
            let g = Gen::new(&self.layout.canonical(), self.worker, self.policy);
            let r = self.durable.get();
            g.ws.state.store(state_before_tick(r, g.layout.sequence_bits), Ordering::Relaxed);
            g.ws.reserved.store(r, Ordering::Relaxed);
            g.durable.set(r);
            g
        }
        fn next(&mut self, clock: &TestClock) -> Result<Issued, GenError> {
            let (ws, layout, durable, reservations) =
                (&self.ws, &self.layout, &self.durable, &self.reservations);
            next_id(ws, layout, self.worker, self.policy, clock, &mut self.local, |tick| {
                let end = reservation_end(layout, tick, clock.now_ms(), self.policy.reserve_window_ms);
                assert!(end > tick);
                durable.set(end);
                reservations.set(reservations.get() + 1);
                ws.reserved.store(end, Ordering::Release);
            })
        }
    }

    #[test]
    fn twitter_clock_frozen_at_epoch_plus_one() {
        let mut g = Gen::new("twitter", 0, ZERO);
        let clock = TestClock::at(1_288_834_974_657 + 1);
        let first = g.next(&clock).unwrap();
        assert_eq!(first.id >> 22, 1);
        assert_eq!(first.id & 0xFFF, 0);
        let second = g.next(&clock).unwrap();
        assert_eq!(second.id - first.id, 1, "consecutive ids in one ms differ by 1");
    }

    #[test]
    fn worker_bits_are_in_place() {
        let mut g = Gen::new("default", 1023, ZERO);
        let clock = TestClock::at(crate::layout::DEFAULT_EPOCH_MS + 5);
        let i = g.next(&clock).unwrap();
        assert_eq!(i.id, (5 << 22) | (1023 << 12));
        assert_eq!(g.layout.decode(i.id).unwrap(), i.parts);
    }

    #[test]
    fn strictly_increasing_through_exhaustion_and_steps_back() {
        let mut g = Gen::new("default", 3, Policy { max_drift_ms: 50, max_wait_ms: 20, ..ZERO });
        let t0 = crate::layout::DEFAULT_EPOCH_MS + 1_000_000;
        let clock = TestClock::at(t0);
        let mut last = 0i64;
        let mut seen = HashSet::new();
        let mut check = |i: Issued, last: &mut i64| {
            assert!(i.id > *last, "id {} after {}", i.id, *last);
            assert!(seen.insert(i.id));
            *last = i.id;
        };
        // A burst in one frozen ms: 4096 ids, then the logical clock runs ahead.
        for _ in 0..4096 * 10 {
            check(g.next(&clock).unwrap(), &mut last);
        }
        assert_eq!(g.ws.exhaustions.load(Ordering::Relaxed), 9);
        let tick = |id: i64| id >> 22;
        assert_eq!(tick(last) - (t0 - crate::layout::DEFAULT_EPOCH_MS), 9, "ran 9 ms ahead");

        // A step back within the drift bound: ids go on increasing on the logical clock.
        clock.add(20);
        check(g.next(&clock).unwrap(), &mut last);
        clock.add(-30);
        let i = g.next(&clock).unwrap();
        assert_eq!(i.step_back_ms, Some(30), "the step back is reported");
        check(i, &mut last);
        for n in 0..3000 {
            if n % 100 == 0 {
                clock.add(1); // time goes on, still behind the highest reading
            }
            let i = g.next(&clock).unwrap();
            assert_eq!(i.step_back_ms, None, "reported once");
            check(i, &mut last);
        }
        // Another caller (a new session) reading the clock now sees no new step.
        let mut other = LocalState::new(99);
        let j = next_id(&g.ws, &g.layout, 3, g.policy, &clock, &mut other, |_| unreachable!()).unwrap();
        assert_eq!(j.step_back_ms, None);
        check(j, &mut last);
        // A small difference is scheduling noise, not a step back.
        clock.add(60);
        check(g.next(&clock).unwrap(), &mut last);
        clock.add(-(STEP_BACK_MIN_MS - 1));
        check(g.next(&clock).unwrap(), &mut last);
        assert_eq!(g.ws.steps_back.load(Ordering::Relaxed), 1);
        assert_eq!(g.ws.waits.load(Ordering::Relaxed), 0);

        // A step back beyond the drift bound but within drift + wait: the call waits.
        clock.add(-45);
        let before_wait = clock.now_ms();
        check(g.next(&clock).unwrap(), &mut last);
        assert!(g.ws.waits.load(Ordering::Relaxed) >= 1);
        assert!(clock.now_ms() > before_wait, "time passed while waiting");
        assert!(clock.waited.get() <= 20);

        // A step back far beyond: a clear error, and nothing issued.
        let issued = g.ws.issued.load(Ordering::Relaxed);
        clock.add(-5_000);
        let e = g.next(&clock).unwrap_err();
        assert!(
            matches!(e, GenError::TooFarAhead { max_drift_ms: 50, max_wait_ms: 20, lead_ms } if lead_ms > 5_000)
        );
        assert!(e.to_string().contains("pg_idgen.max_drift_ms"));
        assert_eq!(g.ws.issued.load(Ordering::Relaxed), issued);
        // The clock comes back: generation resumes above everything issued.
        clock.add(5_000);
        check(g.next(&clock).unwrap(), &mut last);
        clock.add(10);
        check(g.next(&clock).unwrap(), &mut last);
        assert_eq!(g.ws.issued.load(Ordering::Relaxed) as usize, seen.len());
    }

    #[test]
    fn max_drift_zero_waits_for_each_tick_instead_of_running_ahead() {
        let mut g = Gen::new("default", 1, Policy { max_drift_ms: 0, max_wait_ms: 5, ..ZERO });
        let clock = TestClock::at(crate::layout::DEFAULT_EPOCH_MS + 10);
        let mut last = 0;
        for _ in 0..4096 * 3 {
            let i = g.next(&clock).unwrap();
            assert!(i.id > last);
            last = i.id;
            // never ahead of the wall clock
            assert!(g.layout.tick_to_unix_ms(i.parts.time) <= clock.now_ms() as i128);
        }
        assert_eq!(clock.waited.get(), 2, "one 1-ms wait per exhausted tick");
        assert_eq!(g.ws.waits.load(Ordering::Relaxed), 2);
        assert_eq!(g.ws.exhaustions.load(Ordering::Relaxed), 2, "two ticks ran out");
    }

    #[test]
    fn the_fence_sees_the_fixed_tick_after_waits_and_reservations_and_can_refuse() {
        // A lease that ends at `end` (wall ms): the fence refuses once the clock reached it.
        let mut g = Gen::new("default", 2, Policy { max_drift_ms: 0, max_wait_ms: 50, ..ZERO });
        let t0 = crate::layout::DEFAULT_EPOCH_MS + 100;
        let clock = TestClock::at(t0);
        let end = t0 + 1;
        let mut asked = Vec::new();
        let next = |g: &mut Gen, asked: &mut Vec<(u64, i64, bool)>| {
            let (ws, layout, durable) = (&g.ws, &g.layout, &g.durable);
            next_id_fenced(
                ws,
                layout,
                g.worker,
                g.policy,
                &clock,
                &mut g.local,
                |tick| {
                    let e = reservation_end(layout, tick, clock.now_ms(), g.policy.reserve_window_ms);
                    durable.set(e);
                    ws.reserved.store(e, Ordering::Release);
                },
                |tick| {
                    // asked with the tick already reserved, at the clock after any wait
                    let reserved = ws.reserved.load(Ordering::Acquire) > tick;
                    asked.push((tick, clock.now_ms(), reserved));
                    clock.now_ms() < end
                },
            )
        };
        // One full tick (4096 ids) within the lease.
        for _ in 0..4096 {
            next(&mut g, &mut asked).unwrap();
        }
        assert!(
            asked.iter().all(|&(t, now, r)| r && now == t0 && t == 100),
            "every id asked at t0, reserved"
        );
        let issued = g.ws.issued.load(Ordering::Relaxed);
        let state = g.ws.state.load(Ordering::Relaxed);
        // The next id needs the next tick: the call waits 1 ms for the clock (max_drift 0); the
        // lease ended meanwhile, so the fence refuses the id whose time is now fixed.
        asked.clear();
        assert_eq!(next(&mut g, &mut asked).unwrap_err(), GenError::Fenced { tick: 101 });
        assert_eq!(asked, vec![(101, t0 + 1, true)], "asked once, after the wait and the reservation");
        assert_eq!(g.ws.issued.load(Ordering::Relaxed), issued, "no id issued");
        assert_eq!(g.ws.state.load(Ordering::Relaxed), state, "the state did not move");
    }

    #[test]
    fn uncounted_ids_leave_the_count_to_the_caller_and_mark_the_first_of_each_tick() {
        // Zero start: the first id of a tick has sequence 0, every other one its predecessor + 1.
        let mut g = Gen::new("default", 1, ZERO);
        let clock = TestClock::at(crate::layout::DEFAULT_EPOCH_MS + 10);
        let (mut last, mut firsts) = (0i64, 0);
        for n in 0..(4096 * 2 + 5) {
            if n == 4096 + 17 {
                clock.add(5); // a new tick by the clock, in the middle of the second tick's run
            }
            let (ws, layout) = (&g.ws, &g.layout);
            let i = next_id_uncounted(
                ws,
                layout,
                1,
                g.policy,
                &clock,
                &mut g.local,
                |tick| ws.reserved.store(tick + 1000, Ordering::Release),
                |_| true,
            )
            .unwrap();
            assert!(i.id > last);
            assert_eq!(i.new_tick, i.parts.sequence == 0, "id {n}: {i:?}");
            assert_eq!(i.new_tick, last == 0 || (i.id >> 22) != (last >> 22), "id {n}");
            firsts += i.new_tick as u32;
            last = i.id;
        }
        // tick 10 (4096 ids), 11 (10 exhausted: 17 ids), 15 (the clock's, the other 4084)
        assert_eq!(firsts, 3);
        assert_eq!(g.ws.issued.load(Ordering::Relaxed), 0, "the caller counts");
        // next_id counts each id it issues, and only those
        let before = g.ws.issued.load(Ordering::Relaxed);
        g.next(&clock).unwrap();
        assert_eq!(g.ws.issued.load(Ordering::Relaxed), before + 1);
    }

    /// A copy of a generator's state (what `next_id_fast` may read or change).
    fn snapshot(ws: &WorkerState) -> WorkerState {
        let c = WorkerState::default();
        for (a, b) in [(&c.state, &ws.state), (&c.reserved, &ws.reserved), (&c.vibrate, &ws.vibrate)] {
            a.store(b.load(Ordering::Relaxed), Ordering::Relaxed);
        }
        c.wall_high.store(ws.wall_high.load(Ordering::Relaxed), Ordering::Relaxed);
        c
    }

    #[test]
    fn the_fast_attempt_issues_what_the_full_call_issues_or_declines_without_changing_the_state() {
        // vibrating starts, a 300 ms reservation window (early extension in its last 150 ms)
        let policy = Policy {
            max_drift_ms: 50,
            max_wait_ms: 20,
            start: SequenceStart::Vibrate,
            reserve_window_ms: 300,
        };
        let layout = Layout::parse("default").unwrap();
        let ws = WorkerState::default();
        let t0 = crate::layout::DEFAULT_EPOCH_MS + 1_000;
        ws.reserved.store(1_000 + 400, Ordering::Relaxed); // ticks below 1400 reserved
        ws.state.store(state_before_tick(1_000, layout.sequence_bits), Ordering::Relaxed);
        let (mut local, mut other) = (LocalState::new(7), LocalState::new(7));
        let (mut fast, mut declined, mut last) = (0, Vec::new(), 0i64);
        // (clock offset from t0, calls): same ms runs, new ms, an exhaustion, a step back, the
        // reservation's last half, then its end
        for (dt, calls) in [(0, 10), (1, 4096 + 3), (3, 5), (-30, 2), (5, 2), (250, 2), (399, 1), (400, 1)] {
            for _ in 0..calls {
                let now = t0 + dt;
                let pre = [&ws.state, &ws.reserved, &ws.vibrate].map(|a| a.load(Ordering::Relaxed));
                // the full call on a copy of the state
                let copy = snapshot(&ws);
                let expect = next_id_uncounted(
                    &copy,
                    &layout,
                    9,
                    policy,
                    &TestClock::at(now),
                    &mut other,
                    |tick| copy.reserved.store(tick + 1, Ordering::Relaxed),
                    |_| true,
                );
                match next_id_fast(&ws, &layout, 9, policy, now, &mut local) {
                    Some(i) => {
                        fast += 1;
                        assert_eq!(Ok(i), expect, "at +{dt}: the full call issues the same id");
                        assert!(i.id > last);
                        last = i.id;
                    }
                    None => {
                        declined.push(dt);
                        let now_values =
                            [&ws.state, &ws.reserved, &ws.vibrate].map(|a| a.load(Ordering::Relaxed));
                        assert_eq!(now_values, pre, "at +{dt}: declined without a change");
                        // what the full path does instead, so that the run goes on
                        let i = next_id_uncounted(
                            &ws,
                            &layout,
                            9,
                            policy,
                            &TestClock::at(now),
                            &mut other,
                            |tick| ws.reserved.store(tick + 1, Ordering::Relaxed),
                            |_| true,
                        );
                        match i {
                            Ok(i) => {
                                assert!(i.id > last);
                                last = i.id;
                            }
                            Err(e) => assert!(matches!(e, GenError::TooFarAhead { .. }), "{e:?}"),
                        }
                    }
                }
                local = other.clone();
            }
        }
        // declined: the exhausted tick (once), the step back (and the drift beyond 50 ms it
        // leaves), the reservation's last half and its end; everything else fast
        assert_eq!(declined.iter().filter(|&&d| d == 1).count(), 1, "{declined:?}");
        assert!(
            declined.contains(&-30) && declined.contains(&250) && declined.contains(&400),
            "{declined:?}"
        );
        assert!(!declined.contains(&0) && !declined.contains(&3), "{declined:?}");
        assert!(fast >= 4096 + 10, "{fast}");
    }

    #[test]
    fn time_field_overflow_is_an_error_never_a_wrap() {
        // 20 bits of 1 ms: the field ends 2^20 ms after the epoch.
        let mut g = Gen::new("time=20,worker=12,sequence=31,epoch=0", 0, ZERO);
        let clock = TestClock::at((1 << 20) - 1);
        let i = g.next(&clock).unwrap();
        assert_eq!(i.parts.time, (1 << 20) - 1);
        // Exhaust the last tick: the next id would need tick 2^20.
        g.ws.state.store((((1u64 << 20) - 1) << 31) | ((1 << 31) - 1), Ordering::Relaxed);
        assert_eq!(g.next(&clock).unwrap_err(), GenError::TimeOverflow { max_tick: (1 << 20) - 1 });
        clock.add(1);
        assert_eq!(g.next(&clock).unwrap_err(), GenError::TimeOverflow { max_tick: (1 << 20) - 1 });
        // Before the epoch: an error too.
        clock.set(-1);
        assert!(matches!(g.next(&clock).unwrap_err(), GenError::ClockBeforeEpoch { .. }));
    }

    #[test]
    fn js53_generates_safe_ids_up_to_the_end_of_its_field_then_errors() {
        // The clock 50 ms before the end of js53's time field (July 2069), worker 63: ids run
        // through the last five 10 ms ticks (ahead of the clock when a tick's 1,024 are used),
        // every one at most 2^53 − 1, then the field is exhausted: an error, never a wrap.
        let mut g = Gen::new("js53", 63, Policy { max_drift_ms: 1_000, ..ZERO });
        let end = g.layout.time_field_end_ms() as i64;
        let clock = TestClock::at(end - 50);
        let mut last = -1i64;
        let mut issued = 0u64;
        let err = loop {
            match g.next(&clock) {
                Ok(i) => {
                    assert!(i.id > last && i.id <= crate::layout::JS_MAX_SAFE_INTEGER, "{}", i.id);
                    assert_eq!(g.layout.decode(i.id).unwrap(), i.parts);
                    assert_eq!(i.parts.worker, 63);
                    last = i.id;
                    issued += 1;
                }
                Err(e) => break e,
            }
        };
        assert_eq!(err, GenError::TimeOverflow { max_tick: (1 << 37) - 1 });
        assert_eq!(issued, 5 * 1024, "the last five ticks, every sequence value");
        assert_eq!(last, crate::layout::JS_MAX_SAFE_INTEGER, "the very last id is 2^53 - 1");
        // and it stays an error: the clock reaching and passing the end changes nothing
        clock.set(end);
        assert_eq!(g.next(&clock).unwrap_err(), GenError::TimeOverflow { max_tick: (1 << 37) - 1 });
        clock.set(end + 86_400_000);
        assert_eq!(g.next(&clock).unwrap_err(), GenError::TimeOverflow { max_tick: (1 << 37) - 1 });
        // the reservation reached the end of the field: it is never asked to grow again
        assert!(g.durable.get() == (1 << 37), "reserved up to the end of the field");
        // a fresh generator whose clock is already past the end: an error from the first call
        let mut late = Gen::new("js53", 0, ZERO);
        assert!(matches!(late.next(&TestClock::at(end)), Err(GenError::TimeOverflow { .. })));
    }

    #[test]
    fn no_reservation_is_asked_for_once_it_reaches_the_end_of_the_field() {
        // 20 bits of 1 ms; the clock 300 ms before the end, a 1 s window: the first reservation
        // is capped at the end of the field, and no id after it asks for another one (each
        // request writes WAL and the state file).
        let mut g =
            Gen::new("time=20,worker=4,sequence=4,epoch=0", 9, Policy { max_drift_ms: 10_000, ..ZERO });
        let clock = TestClock::at((1 << 20) - 300);
        let mut n = 0u32;
        while let Ok(i) = g.next(&clock) {
            assert!(!i.reserve_soon, "id {} asked for a reservation beyond the field", i.id);
            n += 1;
        }
        assert_eq!(n, 300 * 16, "every sequence value of the last 300 ticks");
        assert_eq!(g.reservations.get(), 1);
        assert_eq!(g.durable.get(), 1 << 20);
        // far from the end the window still asks to grow in its last half
        let mut g =
            Gen::new("time=20,worker=4,sequence=4,epoch=0", 9, Policy { max_drift_ms: 10_000, ..ZERO });
        let clock = TestClock::at(1000);
        let asked = (0..16 * 700).filter(|_| g.next(&clock).unwrap().reserve_soon).count();
        assert!(asked > 0, "the last half of a 1 s window asks to extend it");
    }

    #[test]
    fn no_id_beyond_the_durable_reservation_and_restart_stays_above() {
        let mut g = Gen::new("default", 9, Policy { reserve_window_ms: 100, ..ZERO });
        let t0 = crate::layout::DEFAULT_EPOCH_MS + 500_000;
        let clock = TestClock::at(t0);
        let mut max_issued = 0;
        for step in 0..1000 {
            let i = g.next(&clock).unwrap();
            assert!(i.parts.time < g.durable.get(), "issued tick {} not durable", i.parts.time);
            max_issued = max_issued.max(i.id);
            if step % 3 == 0 {
                clock.add(1);
            }
        }
        assert!(g.reservations.get() >= 3, "the reservation moved forward");
        // Crash, then restart with the clock 60 s behind: the generator refuses ...
        let mut r = g.restarted();
        clock.add(-60_000);
        let res = r.next(&clock);
        assert!(matches!(res, Err(GenError::TooFarAhead { .. })), "{res:?}");
        // ... or, allowed to run ahead that far, continues above every id issued before.
        let mut r = g.restarted();
        r.policy.max_drift_ms = 120_000;
        for _ in 0..10_000 {
            let i = r.next(&clock).unwrap();
            assert!(i.id > max_issued);
            max_issued = i.id;
        }
        // A restart with a correct clock continues too.
        clock.add(60_000);
        let mut r2 = r.restarted();
        assert!(r2.next(&clock).unwrap().id > max_issued);
    }

    /// A generator that lost every reservation after `lost_at` (the standby's view): state and
    /// reservation just below it, then raised to the recovery floor as the server does.
    fn promoted(layout: &str, worker: u64, policy: Policy, replayed: u64, floor_ms: i64) -> Gen {
        let g = Gen::new(layout, worker, policy);
        g.ws.state.store(state_before_tick(replayed, g.layout.sequence_bits), Ordering::Relaxed);
        g.ws.reserved.store(replayed, Ordering::Relaxed);
        g.durable.set(replayed);
        let floor = g.layout.unix_ms_to_tick(floor_ms + g.layout.unit_ms - 1).max(0) as u64;
        g.ws.state.fetch_max(state_before_tick(floor, g.layout.sequence_bits), Ordering::Relaxed);
        g
    }

    #[test]
    fn every_issued_id_starts_at_most_max_drift_after_the_clock_of_its_call() {
        // Bursts that run ahead, waits, a restart behind a reservation far ahead (reserve window
        // larger than the drift), clock steps back and forth, a larger max_drift after a reload:
        // no id ever starts more than the max_drift_ms in force after the clock its call read.
        for layout in ["time=41,worker=10,sequence=3", "default", "time=40,worker=10,sequence=4,unit_ms=10"] {
            let mut g = Gen::new(
                layout,
                7,
                Policy { max_drift_ms: 300, max_wait_ms: 20, reserve_window_ms: 2_000, ..ZERO },
            );
            let clock = TestClock::at(crate::layout::DEFAULT_EPOCH_MS + 10_000_000);
            let mut last = 0i64;
            let mut checked = 0u32;
            let mut rng = 0x9e37_79b9_7f4a_7c15u64;
            for round in 0..400 {
                rng ^= rng << 13;
                rng ^= rng >> 7;
                rng ^= rng << 17;
                match rng % 7 {
                    0 => clock.add((rng >> 8) as i64 % 500),
                    1 => clock.add(-((rng >> 8) as i64 % 400)),
                    2 => g = g.restarted(),
                    3 => g.policy.max_drift_ms = [0, 300, 1_000][(rng >> 8) as usize % 3],
                    _ => {}
                }
                for _ in 0..(rng >> 16) % 3000 {
                    match g.next(&clock) {
                        Ok(i) => {
                            let start = g.layout.tick_to_unix_ms(i.parts.time);
                            assert!(
                                start <= (clock.now_ms() + g.policy.max_drift_ms) as i128,
                                "{layout} round {round}: tick starts at {start}, clock {}, max_drift {}",
                                clock.now_ms(),
                                g.policy.max_drift_ms
                            );
                            assert!(i.id > last);
                            last = i.id;
                            checked += 1;
                        }
                        Err(GenError::TooFarAhead { .. }) => break,
                        Err(e) => panic!("{e}"),
                    }
                }
            }
            assert!(checked > 5_000, "{layout}: {checked} ids checked");
        }
    }

    #[test]
    fn after_recovery_the_floor_is_above_every_id_the_old_primary_could_have_issued() {
        // 8 ids per ms, max_drift 2000: a burst runs the old primary 2 s ahead at once. The old
        // primary's clock is 100 ms ahead of the promoted server's (the skew allowance). The
        // standby replayed only the first reservation.
        let layout = "time=41,worker=10,sequence=3";
        let policy = Policy { max_drift_ms: 2_000, max_wait_ms: 5, reserve_window_ms: 1_000, ..ZERO };
        let skew = 100;
        let real0 = crate::layout::DEFAULT_EPOCH_MS + 50_000_000;
        let old_clock = TestClock::at(real0 + skew);
        let mut old = Gen::new(layout, 7, policy);
        let mut max_old = 0i64;
        let mut all_old = HashSet::new();
        old.next(&old_clock).unwrap();
        let replayed = old.durable.get();
        // a burst until the lead reaches max_drift_ms, then ids at the clock's pace
        let mut burst = |old: &mut Gen, clock: &TestClock, n: usize, max_old: &mut i64| {
            for k in 0..n {
                if k % 8 == 7 {
                    clock.add(1);
                }
                for _ in 0..64 {
                    // after its restart it refuses until its clock reaches the reservation
                    match old.next(clock) {
                        Ok(i) => {
                            *max_old = (*max_old).max(i.id);
                            all_old.insert(i.id);
                        }
                        Err(GenError::TooFarAhead { .. }) => clock.add(1),
                        Err(e) => panic!("{e}"),
                    }
                }
            }
        };
        burst(&mut old, &old_clock, 300, &mut max_old);
        // its own crash and restart behind its reservation, then more
        old = old.restarted();
        burst(&mut old, &old_clock, 300, &mut max_old);
        let lead = old.layout.tick_to_unix_ms((max_old >> 13) as u64) - old_clock.now_ms() as i128;
        assert_eq!(lead, 2_000, "the old primary ran the full max_drift_ms ahead");

        // promoted at once on a clock `skew` behind: the floor with the allowance is above all
        let new_clock = TestClock::at(old_clock.now_ms() - skew);
        let floor = recovery_floor_ms(new_clock.now_ms(), 2_000, skew);
        let mut new = promoted(layout, 7, Policy { max_wait_ms: 10_000, ..policy }, replayed, floor);
        let first = new.next(&new_clock).unwrap();
        assert!(first.id > max_old, "first id {} above the old primary's {}", first.id, max_old);
        assert!(
            new_clock.now_ms() >= recovery_wait_until_ms(floor, 2_000),
            "the first id waited until its lead is within max_drift_ms"
        );
        for _ in 0..20_000 {
            let i = new.next(&new_clock).unwrap();
            assert!(i.id > max_old && !all_old.contains(&i.id));
        }

        // Each part of the bound is needed: one ms less skew allowance, or the promoted server's
        // own smaller max_drift_ms instead of the old primary's, and the first id repeats one.
        let new_clock = TestClock::at(old_clock.now_ms() - skew);
        for (lead, allowance) in [(2_000, skew - 1), (1_000, skew)] {
            let floor = recovery_floor_ms(new_clock.now_ms(), lead, allowance);
            let mut short = promoted(layout, 7, Policy { max_wait_ms: 10_000, ..policy }, replayed, floor);
            let i = short.next(&new_clock).unwrap();
            assert!(
                i.id <= max_old,
                "lead {lead}, allowance {allowance}: {} not at or below {}",
                i.id,
                max_old
            );
        }
        // Without the floor (the replayed reservation and the clock only): most of the first
        // 20,000 ids were issued before.
        let mut bare = promoted(layout, 7, policy, replayed, 0);
        let clock = TestClock::at(old_clock.now_ms() - skew);
        let again = (0..20_000).filter(|_| bare.next(&clock).unwrap().id <= max_old).count();
        assert!(again > 10_000, "{again} of 20,000 at or below the old primary's largest");
    }

    #[test]
    fn a_server_promoted_twice_in_a_row_stays_above_both_old_primaries() {
        // The first promoted server waits until its ids are within its own max_drift_ms: so the
        // same bound holds when it fails over in turn, within milliseconds, to a third server
        // whose clock is `skew` behind it and that replayed nothing of it.
        let layout = "time=41,worker=10,sequence=3";
        let policy = Policy { max_drift_ms: 1_000, max_wait_ms: 5_000, reserve_window_ms: 1_000, ..ZERO };
        let skew = 50;
        let t0 = crate::layout::DEFAULT_EPOCH_MS + 70_000_000;
        let a_clock = TestClock::at(t0);
        let mut a = Gen::new(layout, 1, policy);
        let mut max_seen = 0i64;
        for _ in 0..16_000 {
            max_seen = max_seen.max(a.next(&a_clock).unwrap().id);
        }
        let b_clock = TestClock::at(a_clock.now_ms() + skew);
        let mut b = promoted(layout, 1, policy, 0, recovery_floor_ms(b_clock.now_ms(), 1_000, skew));
        for _ in 0..16_000 {
            let i = b.next(&b_clock).unwrap();
            assert!(i.id > max_seen);
            max_seen = i.id;
        }
        let c_clock = TestClock::at(b_clock.now_ms() - skew);
        let mut c = promoted(layout, 1, policy, 0, recovery_floor_ms(c_clock.now_ms(), 1_000, skew));
        assert!(c.next(&c_clock).unwrap().id > max_seen);
    }

    #[test]
    fn a_standby_whose_clock_is_behind_by_more_than_clock_skew_ms_does_not_reissue_once_it_observed_the_skew()
    {
        // The old primary's clock is 8 s ahead of the standby's (beyond clock_skew_ms, 250). An
        // asynchronous standby that replayed only the first reservation, promoted right after
        // the old primary stopped: with today's floor (its own clock) it hands out ids the old
        // primary handed out; with the lead it observed from the WAL receiver (8 s less the
        // messages' delay, here 3 ms) it refuses (55000) until its clock is within max_drift_ms
        // of the floor, then continues above every id of the old primary, in increasing order.
        let layout = "time=41,worker=10,sequence=3";
        let policy = Policy { max_drift_ms: 2_000, max_wait_ms: 5, reserve_window_ms: 1_000, ..ZERO };
        let (skew, behind, delay_ms) = (250, 8_000, 3);
        let real0 = crate::layout::DEFAULT_EPOCH_MS + 60_000_000;
        let old_clock = TestClock::at(real0 + behind);
        let mut old = Gen::new(layout, 7, policy);
        let replayed = old.layout.unix_ms_to_tick(old_clock.now_ms() + 100) as u64;
        let mut max_old = 0i64;
        for _ in 0..3_000 {
            match old.next(&old_clock) {
                Ok(i) => max_old = max_old.max(i.id),
                Err(GenError::TooFarAhead { .. }) => old_clock.add(1),
                Err(e) => panic!("{e}"),
            }
        }
        // The WAL receiver's last message: sent at the old primary's clock, received 3 ms later.
        let send_us = (old_clock.now_ms() - 946_684_800_000) * 1000 + 417;
        let receipt_us = send_us - behind * 1000 + delay_ms * 1000;
        let observed = observed_sender_lead_ms(send_us, receipt_us);
        assert_eq!(observed, Some(behind - delay_ms));
        let mut lead = SenderLead::NONE;
        lead.observe(observed.unwrap(), old_clock.now_ms() - behind);

        // Today's rule: the first ids repeat the old primary's.
        let new_clock = TestClock::at(old_clock.now_ms() - behind);
        let floor = recovery_floor_ms(new_clock.now_ms(), 2_000, skew);
        let mut bare = promoted(layout, 7, Policy { max_wait_ms: 10_000, ..policy }, replayed, floor);
        assert!(bare.next(&new_clock).unwrap().id <= max_old, "today's floor reissues");

        // With the observed lead.
        let promoted_at = new_clock.now_ms();
        let floor = recovery_floor_observed_ms(promoted_at, 2_000, skew, lead.lead_ms());
        assert_eq!(floor, promoted_at + 2_000 + (behind - delay_ms) + skew + 1);
        let mut new = promoted(layout, 7, policy, replayed, floor);
        let mut refused = 0;
        let mut last = 0i64;
        let mut issued = 0;
        let mut first_at = None;
        while issued < 5_000 {
            match new.next(&new_clock) {
                Ok(i) => {
                    first_at.get_or_insert(new_clock.now_ms());
                    assert!(i.id > max_old, "{} at or below the old primary's {}", i.id, max_old);
                    assert!(i.id > last);
                    last = i.id;
                    issued += 1;
                }
                Err(GenError::TooFarAhead { .. }) => {
                    refused += 1;
                    new_clock.add(1);
                }
                Err(e) => panic!("{e}"),
            }
        }
        // refused for about the observed lead + clock_skew_ms, not more
        let refused_ms = first_at.unwrap() - promoted_at;
        assert!(refused > 0 && refused_ms >= behind - delay_ms + skew - 10, "refused for {refused_ms} ms");
        assert!(refused_ms <= behind + skew + 100, "refused for {refused_ms} ms");
    }

    #[test]
    fn a_correct_clock_or_no_observation_keeps_todays_floor() {
        // Not observed (never streamed), observed behind, observed level: today's rule exactly.
        assert_eq!(recovery_floor_observed_ms(1_000, 2_000, 250, None), recovery_floor_ms(1_000, 2_000, 250));
        assert_eq!(recovery_floor_observed_ms(1_000, 2_000, 250, Some(-4_000)), 3_251);
        assert_eq!(recovery_floor_observed_ms(1_000, 2_000, 250, Some(0)), 3_251);
        assert_eq!(recovery_floor_observed_ms(1_000, 2_000, 250, Some(8_000)), 11_251);
        assert_eq!(recovery_floor_observed_ms(i64::MAX - 5, 2_000, 250, Some(8_000)), i64::MAX);
        // a message: the delay makes the sender look less ahead; rounded up to the ms
        assert_eq!(observed_sender_lead_ms(5_000_000, 3_000_000), Some(2_000));
        assert_eq!(observed_sender_lead_ms(5_000_001, 3_000_000), Some(2_001));
        assert_eq!(observed_sender_lead_ms(3_000_000, 5_000_500), Some(-2_000));
        // no message yet: the receiver's start sets both to the same instant; no receipt
        assert_eq!(observed_sender_lead_ms(7_000_000, 7_000_000), None);
        assert_eq!(observed_sender_lead_ms(7_000_000, 0), None);
    }

    #[test]
    fn the_sender_lead_is_the_largest_recent_observation_and_ages_out() {
        let p = SenderLead::PERIOD_MS;
        let mut l = SenderLead::NONE;
        assert_eq!(l.lead_ms(), None);
        l.observe(7_990, 1_000);
        l.observe(7_950, 2_000); // a slower message: the larger one stays
        assert_eq!(l.lead_ms(), Some(7_990));
        l.observe(100, 1_000 + p); // the sender's clock corrected: the old period still counts
        assert_eq!(l.lead_ms(), Some(7_990));
        l.observe(90, 1_000 + 2 * p); // two periods on, it no longer does
        assert_eq!(l.lead_ms(), Some(100));
        l.observe(80, 1_000 + 5 * p); // after a long silence, only the new observation
        assert_eq!(l.lead_ms(), Some(80));
        l.observe(-20, 500); // this server's clock stepped back: start over
        assert_eq!(l.lead_ms(), Some(-20));
    }

    #[test]
    fn recovery_floor_saturates() {
        assert_eq!(recovery_floor_ms(1_000, 2_000, 250), 3_251);
        assert_eq!(recovery_floor_ms(i64::MAX - 5, 2_000, 250), i64::MAX);
        assert_eq!(recovery_floor_ms(1_000, -5, -5), 1_001);
        assert_eq!(recovery_wait_until_ms(3_251, 2_000), 1_251);
        assert_eq!(recovery_wait_until_ms(i64::MIN + 1, 2_000), i64::MIN);
    }

    #[test]
    fn vibrate_spreads_low_rate_ids_over_low_bits() {
        for start in [SequenceStart::Vibrate, SequenceStart::Random] {
            let mut g = Gen::new("default", 1, Policy { start, ..ZERO });
            let clock = TestClock::at(crate::layout::DEFAULT_EPOCH_MS + 10);
            let mut buckets = [0u32; 8];
            for _ in 0..8000 {
                clock.add(3); // one id every 3 ms
                buckets[(g.next(&clock).unwrap().id % 8) as usize] += 1;
            }
            for b in buckets {
                assert!((500..=1500).contains(&b), "{start:?}: {buckets:?}");
            }
        }
        // With zero start every low-rate id is a multiple of 4096.
        let mut g = Gen::new("default", 0, ZERO);
        let clock = TestClock::at(crate::layout::DEFAULT_EPOCH_MS + 10);
        for _ in 0..100 {
            clock.add(3);
            assert_eq!(g.next(&clock).unwrap().id % 8, 0);
        }
    }

    #[test]
    fn spread_range() {
        assert_eq!(spread(12), 64);
        assert_eq!(spread(10), 16);
        assert_eq!(spread(8), 8);
        assert_eq!(spread(2), 4);
        assert_eq!(spread(1), 2);
    }

    #[test]
    fn threads_share_one_state_without_duplicates() {
        struct Shared {
            ws: WorkerState,
            layout: Layout,
        }
        let shared =
            Arc::new(Shared { ws: WorkerState::default(), layout: Layout::by_name("default").unwrap() });
        shared.ws.reserved.store(u64::MAX, Ordering::Relaxed);
        let policy = Policy {
            max_drift_ms: 10_000,
            max_wait_ms: 100,
            start: SequenceStart::Vibrate,
            reserve_window_ms: 1000,
        };
        let handles: Vec<_> = (0..4)
            .map(|t| {
                let shared = shared.clone();
                std::thread::spawn(move || {
                    let mut local = LocalState::new(t + 1);
                    let mut ids = Vec::with_capacity(250_000);
                    for _ in 0..250_000 {
                        let i =
                            next_id(&shared.ws, &shared.layout, 5, policy, &RealClock, &mut local, |_| {
                                unreachable!("everything is reserved")
                            })
                            .unwrap();
                        ids.push(i.id);
                    }
                    ids
                })
            })
            .collect();
        let mut all = HashSet::new();
        for h in handles {
            let ids = h.join().unwrap();
            assert!(ids.windows(2).all(|w| w[0] < w[1]), "each thread's ids strictly increase");
            for id in ids {
                assert!(all.insert(id), "duplicate {id}");
            }
        }
        assert_eq!(all.len(), 1_000_000);
        assert_eq!(shared.ws.issued.load(Ordering::Relaxed), 1_000_000);
    }
}
