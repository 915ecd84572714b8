//! The lease worker: a background worker that claims this node's worker id lease from the
//! registry at start (or at promotion), renews it three times per lease, and releases it at a
//! clean shutdown. It publishes the id and the lease's local validity in shared memory
//! (`lease::shmem`), which is all `snowflake_next()` looks at.
//!
//! Local validity: `t0 + ttl - margin`, with `t0` the `CLOCK_BOOTTIME` reading taken *before*
//! the claim statement is sent. The registry's `lease_until` is its `now()` + ttl, and its `now()`
//! is read after `t0`; so, as long as the two clocks' *rates* differ by less than `margin` over
//! one ttl, this node stops generating before the registry lets any other node take the id.
//! No wall-clock time of this node is compared with the registry's.
//!
//! Signals as PostgreSQL's own workers handle them: SIGHUP sets a flag, the loop calls
//! `ProcessConfigFile(PGC_SIGHUP)`; SIGTERM ends the loop, the lease is invalidated locally and
//! released in the registry, and the worker exits with 1 (so that a `pg_terminate_backend()`
//! gets it restarted by the postmaster; at shutdown nothing is restarted). When the postmaster
//! dies (kill -9) the worker exits *without* releasing: orphaned backends may still generate
//! until they notice, so the lease has to run out.

use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use pgrx::bgworkers::{BackgroundWorker, BackgroundWorkerBuilder, BgWorkerStartTime, SignalWakeFlags};
use pgrx::pg_sys;
use pgrx::prelude::*;

use super::registry::{Claim, Holder, Outcome, Registry};
use super::shmem::{self, State};
use super::term::term_requested;
use crate::clock::boottime_ms;
use crate::gucs::{self, LeaseMode};

/// Random per postmaster start (inherited by every child): tells this server's lease from one of
/// a clone (same system identifier and settings). Kept across a crash restart of the backends.
/// Set by `lease::init` while preloading, sent with every claim.
static TOKEN: AtomicI64 = AtomicI64::new(0);

pub fn set_token(t: i64) {
    TOKEN.store(t, Ordering::Relaxed);
}

fn token() -> i64 {
    TOKEN.load(Ordering::Relaxed)
}

/// Registers the worker (from `_PG_init`, while preloading, when `pg_idgen.lease_mode` is not off).
pub fn register() {
    BackgroundWorkerBuilder::new("pg_idgen lease worker")
        .set_type("pg_idgen lease")
        .set_library("pg_idgen")
        .set_function("pg_idgen_lease_main")
        .enable_shmem_access(None)
        // Connected to no database (as the logical replication launcher): shown in
        // pg_stat_activity as backend_type 'pg_idgen lease', and pg_terminate_backend() works.
        .enable_spi_access()
        .set_start_time(BgWorkerStartTime::ConsistentState)
        .set_restart_time(Some(Duration::from_secs(1)))
        .load();
}

/// The settings of one round, read on the worker's thread after each reload.
struct Settings {
    mode: LeaseMode,
    conninfo: String,
    ttl_ms: i64,
    margin_ms: i64,
    retire_s: f64,
}

impl Settings {
    fn read() -> Settings {
        let ttl_ms = gucs::int_setting(&gucs::LEASE_TTL) as i64 * 1000;
        let margin_ms = pg_idgen_core::lease::effective_margin_ms(
            ttl_ms,
            gucs::int_setting(&gucs::LEASE_MARGIN) as i64 * 1000,
        );
        Settings {
            mode: gucs::lease_mode(),
            conninfo: gucs::string_setting(&gucs::REGISTRY),
            ttl_ms,
            margin_ms,
            retire_s: gucs::int_setting(&gucs::LEASE_RETIRE) as f64,
        }
    }
    /// How long this node may generate after a successful round: ttl - margin.
    fn valid_ms(&self) -> i64 {
        self.ttl_ms - self.margin_ms
    }
    /// Renew three times per local validity.
    fn renew_every_ms(&self) -> i64 {
        (self.valid_ms() / 3).max(200)
    }
    /// Bound of every registry operation: a quarter of the validity, 0.5 .. 10 s.
    fn timeout(&self) -> Duration {
        Duration::from_millis((self.valid_ms() / 4).clamp(500, 10_000) as u64)
    }
}

fn hostname() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: gethostname writes at most buf.len() bytes into buf.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    if rc != 0 {
        return "unknown".into();
    }
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).into_owned()
}

fn holder() -> Holder {
    Holder {
        // SAFETY: the control file's identifier, set at startup.
        system_identifier: unsafe { pg_sys::GetSystemIdentifier() }.to_string(),
        node_name: gucs::string_setting(&gucs::NODE_NAME),
        host: hostname(),
        // SAFETY: set by the postmaster from `port` before any child starts.
        port: unsafe { pg_sys::PostPortNumber },
        token: token(),
    }
}

struct Worker {
    sh: &'static shmem::LeaseShared,
    reg: Registry,
    me: Holder,
    /// The id this worker holds or tries (auto: kept across rounds, sticky), and whether the
    /// registry granted it in the last round.
    id: Option<i64>,
    held: bool,
    last_logged: Option<(State, String)>,
    /// Another holder's lease as last seen: (worker id, token, renewed_at µs), the monotonic ms
    /// when this node first saw it so, and the holder's ttl (ms). An expired lease is taken over
    /// only after it was seen unchanged for a full ttl — the longer of this node's and the
    /// holder's — on this node's clock: whatever the registry's clock did (a step forward ends
    /// leases early there), the holder has stopped by then.
    seen: Option<((i64, i64, i64), i64, i64)>,
    /// Whether the warning "this server is its own registry" was logged.
    warned_self: bool,
    /// The worker id of the last grant, to which `inherited_ms` belongs.
    granted_id: Option<i64>,
    /// The last error of the registry slots' round (logged once until it changes).
    slot_error: Option<String>,
    /// Whether the last grant said a registry slot names this node's worker id.
    has_slots: bool,
    /// Whether shared memory may hold registry slots this worker (or its predecessor, before a
    /// restart of the worker) published: a round is due to withdraw them.
    slots_published: bool,
}

impl Worker {
    /// Sets the shared state, and logs it when it changed (LOG for good news, WARNING otherwise).
    fn set(&mut self, state: State, info: String) {
        self.sh.set(state, &info);
        // Logged once per state and holder: the other holder's renewals change only the end of
        // its lease, which must not make a WARNING per round.
        let stable = info.split(", lease until ").next().unwrap_or_default().to_string();
        let key = (state, stable);
        if self.last_logged.as_ref() != Some(&key) {
            let msg = if info.is_empty() {
                format!("pg_idgen lease: {}", state.name())
            } else {
                format!("pg_idgen lease: {}: {info}", state.name())
            };
            if matches!(state, State::Held | State::Released | State::Standby) {
                pgrx::log!("{msg}");
            } else {
                pgrx::warning!("{msg}");
            }
            self.last_logged = Some(key);
        }
    }

    /// A registry operation of the round failed: a lock wait in the registry (55P03: it
    /// answered, another of its sessions held the lock) or an unreachable or failing registry.
    /// The validity already granted is kept: generation goes on until it runs out.
    fn failed(&mut self, e: String) {
        self.sh.failures.fetch_add(1, Ordering::Relaxed);
        let state = if self.reg.lock_wait() { State::LockWait } else { State::Unreachable };
        self.set(state, e);
    }

    /// Records the other holder's lease of `id` as seen now (keeps the first sighting while it
    /// is unchanged).
    fn see(&mut self, id: i64, lease: Option<(i64, i64)>, holder_ttl_ms: i64) {
        let Some((token, renewed)) = lease else {
            self.seen = None;
            return;
        };
        let key = (id, token, renewed);
        if self.seen.map(|(k, _, _)| k) != Some(key) {
            self.seen = Some((key, boottime_ms(), holder_ttl_ms));
        }
    }

    /// The expired lease of `id` this node may take over: the one it has seen unchanged for at
    /// least a full ttl (its own monotonic clock), its own or the holder's, whichever is longer
    /// (nodes with different `lease_ttl`: the holder's validity lasts its own ttl).
    fn may_take(&self, id: i64, st: &Settings) -> Option<(i64, i64)> {
        match self.seen {
            Some(((i, token, renewed), since, holder_ttl))
                if i == id && boottime_ms() - since >= st.ttl_ms.max(holder_ttl) =>
            {
                Some((token, renewed))
            }
            _ => None,
        }
    }

    /// The registry's segment slots of this node (`lease::slots`): after a lease round, or when
    /// a backend asked for a ceiling (`demand`). Without a valid lease, the node stops serving
    /// them. The registry is asked only when a slot names this node's worker id (the grant
    /// says), when slots are published here, or on a backend's demand: a node whose worker id
    /// has no registry slot sends one statement per round, the renewal.
    fn slot_round(&mut self, demand: bool) {
        let (id, until) = shmem::unpack(self.sh.word.load(Ordering::Acquire));
        match id {
            Some(_)
                if self.held
                    && until > boottime_ms() as u64
                    && !(demand || self.has_slots || self.slots_published) =>
            {
                // Nothing to serve, nothing to withdraw: backends of a registry tag see a valid
                // lease and no slot ("holds no slot"), not an invalid lease.
                crate::segment::owners::set_valid_until(until);
            }
            Some(id) if self.held && until > boottime_ms() as u64 => {
                match super::slots::round(&mut self.reg, &self.me, id, until) {
                    Ok(published) => {
                        self.slot_error = None;
                        self.slots_published = published;
                    }
                    Err(e) => {
                        self.sh.failures.fetch_add(1, Ordering::Relaxed);
                        if self.slot_error.as_deref() != Some(e.as_str()) {
                            pgrx::warning!("pg_idgen lease: registry slots: {e}");
                            self.slot_error = Some(e);
                        }
                    }
                }
            }
            _ => crate::segment::owners::invalidate(),
        }
    }

    /// Gives up the id locally first (no backend may use it any more), then in the registry.
    fn drop_id(&mut self) {
        self.sh.publish(None, 0);
        // As in `invalidate`: the bound below is read after the word is withdrawn.
        std::sync::atomic::fence(Ordering::SeqCst);
        if let (Some(id), true) = (self.id, self.held) {
            let _ = self.reg.release(&self.me, id, release_bound(self.sh, id));
        }
        self.id = None;
        self.held = false;
    }

    /// One claim-or-renew round; true when the lease is held afterwards.
    fn round(&mut self, st: &Settings) -> bool {
        if st.conninfo.trim().is_empty() {
            self.sh.publish(None, 0);
            self.set(State::Misconfigured, "pg_idgen.registry is not set".into());
            return false;
        }
        if let Err(e) = super::registry::check_conninfo(&st.conninfo) {
            // Not a registry that cannot be reached: a setting to fix. The validity already
            // granted runs out as when the registry is unreachable.
            self.set(
                State::Misconfigured,
                format!("pg_idgen.registry is not a valid connection string: {e}"),
            );
            return false;
        }
        self.reg.configure(&st.conninfo, st.timeout());
        // One registry per server start: leases granted by one registry mean nothing to another
        // (a reload to another database would keep this node's validity while the other registry
        // grants the id elsewhere). A physical replica of the registry has the same identity.
        match self.reg.identity() {
            Ok((sysid, db)) => {
                if !self.warned_self && self.me.system_identifier == sysid.to_string() {
                    // Same system identifier: this server (or a physical copy of it) is the
                    // registry. Its smart shutdown waits for this worker's own registry session,
                    // and at a fast shutdown the release cannot reach it.
                    self.warned_self = true;
                    pgrx::warning!(
                        "pg_idgen lease: pg_idgen.registry names this server itself (or a physical copy of it, system identifier {sysid}): a smart shutdown waits for the lease worker's own registry session, and the lease is not released at a fast shutdown (it runs out); use a registry on another server"
                    );
                }
                let (had_sysid, had_db) = (
                    self.sh.registry_sysid.load(Ordering::Acquire),
                    self.sh.registry_db.load(Ordering::Acquire),
                );
                if had_sysid != 0 && (had_sysid, had_db) != (sysid, db) {
                    // Stop at once, and never release in a registry that did not grant it.
                    self.sh.invalidate();
                    self.held = false;
                    self.set(
                        State::Misconfigured,
                        format!(
                            "pg_idgen.registry names another registry (system identifier {sysid}, database oid {db}) than the one that granted this server's lease (system identifier {had_sysid}, database oid {had_db}); a registry moves only by physical replication: restart the server to use another one"
                        ),
                    );
                    return false;
                }
            }
            Err(e) => {
                self.failed(e);
                return false;
            }
        }
        let wanted = match st.mode {
            LeaseMode::Off => return false,
            LeaseMode::Fixed => match gucs::worker_id_setting() {
                Some(w) if (w as i64) <= gucs::LEASE_MAX_WORKER => Some(w as i64),
                Some(w) => {
                    self.drop_id();
                    self.set(
                        State::Misconfigured,
                        format!("worker id {w} is above {} and cannot be leased", gucs::LEASE_MAX_WORKER),
                    );
                    return false;
                }
                None => {
                    self.drop_id();
                    self.set(
                        State::Misconfigured,
                        "pg_idgen.lease_mode = fixed needs pg_idgen.worker_id in postgresql.conf".into(),
                    );
                    return false;
                }
            },
            LeaseMode::Auto => self.id,
        };
        if self.id.is_some() && wanted != self.id {
            self.drop_id(); // fixed id changed by a reload
        }
        let t0 = boottime_ms();
        // The bound of the ids this grant allows, by this node's clock: the end of its local
        // validity plus the lead the generator's clock may have. The registry keeps the highest
        // one (hwm_ms); a node that takes the id over continues above it.
        let limit_ms = crate::clock::now_unix_ms() + st.valid_ms() + gucs::policy().max_drift_ms;
        let claim = Claim {
            worker_id: wanted.unwrap_or(-1),
            fixed: st.mode == LeaseMode::Fixed,
            ttl_s: st.ttl_ms as f64 / 1000.0,
            retire_s: st.retire_s,
            limit_ms,
            take: None,
        };
        let (id, outcome) = match wanted {
            Some(id) => (id, self.reg.claim(&self.me, &Claim { take: self.may_take(id, st), ..claim })),
            None => {
                // auto without an id: choose and claim in one registry transaction.
                let (lo, hi) = gucs::lease_range();
                let take = self.seen.and_then(|((i, _, _), _, _)| self.may_take(i, st).map(|t| (i, t)));
                match self.reg.choose_and_claim(&self.me, lo, hi, &claim, take) {
                    Ok(Some((id, outcome))) => (id, Ok(outcome)),
                    Ok(None) => {
                        self.set(
                            State::Exhausted,
                            format!("every worker id of pg_idgen.lease_range {lo}-{hi} is leased or not yet retired"),
                        );
                        return false;
                    }
                    Err(e) => {
                        self.failed(e);
                        return false;
                    }
                }
            }
        };
        match outcome {
            Ok(Outcome::Granted { since_ms, floor_ms, has_slots }) => {
                self.has_slots = has_slots;
                let until = pg_idgen_core::lease::valid_until_ms(t0, st.ttl_ms, st.margin_ms);
                // A floor bounds the ids of one worker id: the one inherited with another id
                // (before a reload of pg_idgen.worker_id, or another auto choice) says nothing
                // about this id, and must not stop this id's floor from being applied.
                if self.granted_id != Some(id) {
                    self.sh.inherited_ms.store(0, Ordering::Release);
                    self.granted_id = Some(id);
                }
                if floor_ms > self.sh.inherited_ms.load(Ordering::Acquire) {
                    // Taken over: every id of the previous holders lies below floor_ms. Continue
                    // above it (durably) before any backend may generate; while it is ahead of
                    // this node's clock by more than max_drift_ms, snowflake_next() waits or
                    // fails with 55000 "ahead of the system clock" instead of issuing below it.
                    crate::shmem::raise_floor(id, floor_ms);
                    self.sh.inherited_ms.fetch_max(floor_ms, Ordering::AcqRel);
                    pgrx::log!("pg_idgen lease: worker id {id} taken over: ids continue at or after {floor_ms} ms since 1970 (the previous holders' bound)");
                }
                if self.sh.registry_sysid.load(Ordering::Acquire) == 0 {
                    if let Ok((sysid, db)) = self.reg.identity() {
                        self.sh.registry_db.store(db, Ordering::Release);
                        self.sh.registry_sysid.store(sysid, Ordering::Release);
                    }
                }
                self.sh.limit_ms.store(limit_ms, Ordering::Release);
                self.sh.publish(Some(id), until);
                self.sh.since_ms.store(since_ms, Ordering::Relaxed);
                self.sh.renewals.fetch_add(1, Ordering::Relaxed);
                self.id = Some(id);
                self.held = true;
                self.set(State::Held, format!("worker id {id}"));
                true
            }
            Ok(Outcome::Taken(other)) => {
                // Never ours (any more): stop at once, whatever the local validity said.
                self.sh.publish(Some(id), 0);
                self.see(id, other.lease, other.ttl_ms);
                self.sh.conflicts.fetch_add(1, Ordering::Relaxed);
                // auto: choose again next round (a node's own sticky id is chosen again, and
                // refused again while the other holder keeps it: a clone never takes it over).
                self.id = if st.mode == LeaseMode::Auto { None } else { Some(id) };
                self.held = false;
                self.set(State::Taken, format!("worker id {id} is leased by {}", other.text));
                false
            }
            Err(e) => {
                // Keep the validity already granted: generation goes on until it runs out.
                self.failed(e);
                false
            }
        }
    }
}

/// The bound sent with a release (after the word was invalidated): every id this node issued
/// or can still issue with `id` lies below its reservation's end (a backend past the fence
/// issues at a tick it reserved before; the reservation is durable and never moves back, also
/// across a crash restart), and the ids of the holders before it below the floor it inherited.
/// Not capped by the current lease's limit: ids issued under an earlier lease of this server
/// (before a crash restart, with the wall clock stepped back since) can lie above it. The registry keeps LEAST(hwm_ms, bound), and hwm_ms is above every earlier limit.
fn release_bound(sh: &shmem::LeaseShared, id: i64) -> i64 {
    let issued = crate::shmem::reserved_until_ms(id);
    issued.max(sh.inherited_ms.load(Ordering::Acquire))
}

enum Wake {
    Go,
    Term,
    PostmasterDied,
}

/// Waits on the worker's latch for at most `ms`; handles pending interrupts (procsignal
/// barriers: the worker is connected, so other backends may wait for it to absorb them).
fn wait(ms: i64) -> Wake {
    // SAFETY: MyLatch is this process's latch; the flags and the wait event are PostgreSQL's.
    let rc = unsafe {
        let rc = pg_sys::WaitLatch(
            pg_sys::MyLatch,
            (pg_sys::WL_LATCH_SET | pg_sys::WL_TIMEOUT | pg_sys::WL_POSTMASTER_DEATH) as i32,
            ms,
            pg_sys::PG_WAIT_EXTENSION,
        );
        pg_sys::ResetLatch(pg_sys::MyLatch);
        rc
    };
    pgrx::check_for_interrupts!();
    if rc & pg_sys::WL_POSTMASTER_DEATH as i32 != 0 {
        Wake::PostmasterDied
    } else if term_requested() {
        Wake::Term
    } else {
        Wake::Go
    }
}

/// The postmaster died (kill -9): stop generating, but do NOT release. Orphaned backends may
/// still be generating until they notice; the lease must run out by itself.
// proc_exit is `-> !` in the bindings of 15-17, `-> ()` in 18's (pg_noreturn moved).
#[allow(unreachable_code)]
fn postmaster_died(sh: &shmem::LeaseShared) -> ! {
    crate::segment::owners::invalidate();
    sh.invalidate();
    // SAFETY: ends this process, as PostgreSQL's processes do when the postmaster is gone.
    unsafe { pg_sys::proc_exit(1) };
    unreachable!("proc_exit returned")
}

#[pg_guard]
#[no_mangle]
pub extern "C-unwind" fn pg_idgen_lease_main(_arg: pg_sys::Datum) {
    BackgroundWorker::attach_signal_handlers(SignalWakeFlags::SIGHUP | SignalWakeFlags::SIGTERM);
    BackgroundWorker::connect_worker_to_spi(None, None);
    let Some(sh) = shmem::shared() else { return };
    let reg = match Registry::new() {
        Ok(r) => r,
        Err(e) => {
            sh.set(State::Misconfigured, &e);
            pgrx::error!("pg_idgen lease worker: cannot start its registry client: {e}");
        }
    };
    let mut w = Worker {
        sh,
        reg,
        me: holder(),
        id: None,
        held: false,
        last_logged: None,
        seen: None,
        warned_self: false,
        granted_id: None,
        slot_error: None,
        has_slots: false,
        slots_published: true,
    };
    // A worker restarted after an error (or pg_terminate_backend) continues the lease of its
    // predecessor: same token, so its first round is a renewal.
    if let (Some(id), _) = shmem::unpack(sh.word.load(Ordering::Acquire)) {
        w.id = Some(id);
        w.held = sh.state() == State::Held;
    }
    // SAFETY: MyLatch is this process's latch, in its PGPROC (shared memory).
    crate::segment::owners::set_worker_latch(unsafe { pg_sys::MyLatch });
    // SAFETY: as above.
    crate::keyed::marks::set_worker_latch(unsafe { pg_sys::MyLatch });
    let mut next_round = 0i64;
    let mut was_standby = false;
    loop {
        if BackgroundWorker::sighup_received() {
            // SAFETY: on the worker's main thread, outside any transaction, as PostgreSQL's own
            // background workers reload their configuration.
            unsafe { pg_sys::ProcessConfigFile(pg_sys::GucContext::PGC_SIGHUP) };
            next_round = 0; // apply new settings (registry, ttl) at once
        }
        let st = Settings::read();
        // SAFETY: reads shared recovery state; valid in any process attached to shared memory.
        if unsafe { pg_sys::RecoveryInProgress() } {
            if !was_standby {
                crate::segment::owners::invalidate();
                sh.publish(None, 0);
                w.set(State::Standby, "a standby holds no lease; it claims one when promoted".into());
                was_standby = true;
            }
            match wait(500) {
                Wake::Go => continue,
                Wake::Term => break,
                Wake::PostmasterDied => postmaster_died(sh),
            }
        }
        // Keyed spaces' registry marks first: backends wait for them before handing out values
        // above a bound (a raise) or at all (a claim after a start or a promotion).
        super::marks::round(&mut w.reg, &w.me.system_identifier, &st.conninfo, st.timeout());
        let now = boottime_ms();
        let demand = crate::segment::owners::take_demand();
        let mut slots_due = demand;
        if now >= next_round {
            let ok = w.round(&st);
            let after = boottime_ms();
            next_round = if ok { now + st.renew_every_ms() } else { after + st.renew_every_ms().min(1000) };
            slots_due = true;
        }
        if slots_due {
            w.slot_round(demand);
        }
        match wait((next_round - boottime_ms()).clamp(10, 1000)) {
            Wake::Go => {}
            Wake::Term => break,
            Wake::PostmasterDied => postmaster_died(sh),
        }
    }
    // SIGTERM: stop generating, then release. The registry's slots stay this node's (a
    // restart takes them again above their ceilings); serving them stops now.
    crate::segment::owners::invalidate();
    crate::segment::owners::set_worker_latch(std::ptr::null_mut());
    crate::keyed::marks::set_worker_latch(std::ptr::null_mut());
    crate::keyed::marks::fail_pending("the lease worker is shutting down");
    sh.invalidate();
    // The release is the one registry operation after SIGTERM: bounded by the timeout, not cut
    // short by the signal.
    w.reg.abort_on_term = false;
    if let (Some(id), true) = (w.id, w.held) {
        match w.reg.release(&w.me, id, release_bound(sh, id)) {
            Ok(_) => w.set(State::Released, format!("worker id {id} released")),
            Err(e) => {
                pgrx::warning!("pg_idgen lease: could not release worker id {id}; it expires by itself: {e}")
            }
        }
    }
    w.reg.disconnect();
    // SAFETY: ends the worker; exit code 1 lets the postmaster restart it after a
    // pg_terminate_backend() (nothing is restarted during a shutdown).
    unsafe { pg_sys::proc_exit(1) };
}
