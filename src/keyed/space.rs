//! A keyed space: its stored configuration (a row of `pg_idgen_keyed_spaces`), its shared entry
//! (found or claimed by name, checked against the catalog, with its buckets' durable bounds read
//! from `pg_idgen_keyed_bounds`), and raising a bucket's durable bound.

use std::cell::RefCell;
use std::sync::atomic::Ordering;

use pg_idgen_core::keyed::{validate_config, validate_nodes, Stride};
use pgrx::pg_sys;

use super::table::{header, my_db, space, space_mut, Held, FAIR_SHARE, MAX_NAME_BYTES, MAX_SPACES};
use crate::catalog::RunAs;
use crate::errors::{raise, Code};
use crate::tables;

/// A space as a backend uses it: its shared entry and a copy of its configuration, valid as
/// long as the entry's generation is `gen`.
#[derive(Clone, Copy, Debug)]
pub(super) struct Resolved {
    pub(super) idx: usize,
    pub(super) gen: u64,
    pub(super) seqoid: pg_sys::Oid,
    pub(super) step: i64,
    pub(super) section_size: i64,
    /// Plain mode, or fleet mode's nodes and this node's index: counter `c` is value
    /// `stride.value(c)`.
    pub(super) stride: Stride,
    /// Bounds raised through the lease registry's marks too (`marks`).
    pub(super) registry: bool,
    /// The role last found to have USAGE on the space (InvalidOid: none yet), by `authorize`;
    /// cleared with the cache by every relcache invalidation (a GRANT or REVOKE on the backing
    /// sequence sends one) and every change of role memberships or attributes.
    pub(super) usage_for: pg_sys::Oid,
}

impl Resolved {
    pub(super) fn still_valid(&self) -> bool {
        space(self.idx).gen.load(Ordering::Acquire) == self.gen
    }
}

/// A space's row of pg_idgen_keyed_spaces.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) struct Config {
    pub(super) seqoid: pg_sys::Oid,
    pub(super) step: i64,
    pub(super) section_size: i64,
    pub(super) stride: Stride,
    pub(super) registry: bool,
}

pub(super) fn validate_name(name: &[u8]) -> &str {
    if name.is_empty() {
        raise(Code::ERRCODE_INVALID_PARAMETER_VALUE, "keyed space name must not be empty", None);
    }
    if name.len() > MAX_NAME_BYTES {
        raise(
            Code::ERRCODE_NAME_TOO_LONG,
            format!("keyed space name is too long ({} bytes)", name.len()),
            Some("A space name can have at most 63 bytes."),
        );
    }
    std::str::from_utf8(name).unwrap_or_else(|_| {
        raise(Code::ERRCODE_CHARACTER_NOT_IN_REPERTOIRE, "keyed space name is not valid UTF-8", None)
    })
}

pub(super) fn unknown_space(name: &str) -> ! {
    raise(
        Code::ERRCODE_UNDEFINED_OBJECT,
        format!("keyed space \"{name}\" does not exist"),
        Some("Create it with keyed_create(space) (as a superuser); SELECT space FROM pg_idgen_keyed_spaces lists the spaces of this database."),
    )
}

pub(super) fn missing_sequence(name: &str) -> ! {
    raise(
        Code::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
        format!("the backing sequence of keyed space \"{name}\" does not exist"),
        Some("It was dropped by hand. The values handed out before are unknown: drop the space and create it again, then move its keys above every value your tables hold."),
    )
}

/// Reads a space's row with a fresh snapshot, by OID, no SQL (see `tables`); a row edited by
/// hand into something out of range is reported, not used.
pub(super) fn read_config(name: &str) -> Option<Config> {
    let mut found = None;
    tables::scan_extension_table(c"pg_idgen_keyed_spaces", |row| {
        if found.is_none() && row.text("space").as_deref() == Some(name) {
            found = Some((
                row.oid("seq"),
                row.i64("step"),
                row.i64("section_size"),
                row.i64("nodes"),
                row.i64("node_index"),
                row.bool("registry"),
            ));
        }
    });
    let (seq, step, size, nodes, index, registry) = found?;
    let registry = registry.unwrap_or(false);
    match (seq, step, size) {
        (Some(seqoid), Some(step), Some(section_size))
            if validate_config(step, section_size).is_ok() && validate_nodes(nodes, index).is_ok() =>
        {
            Some(Config { seqoid, step, section_size, stride: Stride::new(nodes, index), registry })
        }
        _ => raise(
            Code::ERRCODE_DATA_CORRUPTED,
            format!("the configuration of keyed space \"{name}\" in pg_idgen_keyed_spaces is invalid"),
            Some("pg_idgen_keyed_spaces is written by keyed_create(); drop the space and create it again."),
        ),
    }
}

pub(super) fn missing_bounds(name: &str) -> ! {
    raise(
        Code::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
        format!("the durable bounds of keyed space \"{name}\" are missing from pg_idgen_keyed_bounds"),
        Some("keyed_create writes 1,024 rows per space, and a restore restores them; rows deleted by hand leave the values handed out before unknown: drop the space and create it again, then move its keys above every value your tables hold."),
    )
}

/// The locks of a space that keep a claim's read of the durable bounds (`resolve_slow`,
/// CLAIM_LOCK) and raises of them (`raise_bound`, RAISE_LOCK) apart: a raise between the read and
/// the claim, by a backend of an entry released meanwhile, would leave the claimed floors below
/// values it handed out. Claims do not exclude each other, nor raises (of one bucket they are
/// serialised by the row's buffer lock); keyed_set_node and pg_idgen_keyed_raise_bounds
/// (ExclusiveLock) exclude both, keyed_drop (AccessExclusiveLock) everything.
const CLAIM_LOCK: pg_sys::LOCKMODE = pg_sys::ShareLock as pg_sys::LOCKMODE;
const RAISE_LOCK: pg_sys::LOCKMODE = pg_sys::RowExclusiveLock as pg_sys::LOCKMODE;

/// Takes the lock of the space whose backing sequence is `seqoid` in `mode` (see `CLAIM_LOCK`),
/// until `unlock_space` or the transaction's end. It is an object lock whose class is the table
/// pg_idgen_keyed_spaces (its OID) and whose object is the sequence's OID: no SQL command can
/// take or wait for it (SQL locks relations by their relation lock, and other objects under the
/// OID of their system catalog). Not the sequence's own lock: USAGE on the space is USAGE on the
/// sequence, so a grantee may call nextval() on it, and an open transaction after that holds
/// RowExclusiveLock on the sequence, which a claim's ShareLock would wait for.
pub(super) fn lock_space(seqoid: pg_sys::Oid, mode: pg_sys::LOCKMODE) {
    let class = tables::extension_table(c"pg_idgen_keyed_spaces");
    // SAFETY: a heavyweight object lock in this database, by OIDs; it also processes the pending
    // invalidations once granted, so the syscache probes after it see what the holder committed.
    unsafe { pg_sys::LockDatabaseObject(class, seqoid, 0, mode) };
}

/// Releases a lock `lock_space` took.
pub(super) fn unlock_space(seqoid: pg_sys::Oid, mode: pg_sys::LOCKMODE) {
    let class = tables::extension_table(c"pg_idgen_keyed_spaces");
    // SAFETY: releases a lock this backend holds (taken by `lock_space` with the same tag).
    unsafe { pg_sys::UnlockDatabaseObject(class, seqoid, 0, mode) };
}

thread_local! {
    /// The spaces this backend used, by name (cleared by every relcache invalidation).
    static RESOLVED: RefCell<Vec<(Vec<u8>, Resolved)>> = const { RefCell::new(Vec::new()) };
}

/// Forgets the spaces this backend resolved (the catalog callback: a drop, a restore).
pub fn invalidate() {
    RESOLVED.with(|r| r.borrow_mut().clear());
}

pub(super) fn forget(name: &[u8]) {
    RESOLVED.with(|r| r.borrow_mut().retain(|(n, _)| n != name));
}

/// Whether the syscache callbacks that clear the cache on role changes are registered (once per
/// backend, at its first check).
static mut ROLE_CALLBACKS: bool = false;

/// Syscache callback (role memberships, role attributes): forget every privilege found.
#[pgrx::pg_guard]
unsafe extern "C-unwind" fn on_roles_changed(_arg: pg_sys::Datum, _cache: std::ffi::c_int, _hash: u32) {
    invalidate();
}

/// USAGE on the space (on its backing sequence: superusers, the sequence's owner and the roles it
/// was granted to, directly or through membership) for the current user, or 42501.
pub(super) fn check_usage(name: &str, seqoid: pg_sys::Oid) {
    // SAFETY: reads the current user; an ACL check by OID through the syscache.
    let ok = unsafe {
        pg_sys::pg_class_aclcheck(seqoid, pg_sys::GetUserId(), pg_sys::ACL_USAGE as pg_sys::AclMode)
            == pg_sys::AclResult::ACLCHECK_OK
    };
    if !ok {
        raise(
            Code::ERRCODE_INSUFFICIENT_PRIVILEGE,
            format!("permission denied for keyed space \"{name}\""),
            Some("A role needs USAGE on the space to call keyed_next or keyed_last: keyed_grant(space, role), by a superuser or a role holding the grant option."),
        );
    }
}

/// The privilege check of `keyed_next` and `keyed_last`: USAGE on the space for the current
/// user, checked once per (space entry, user) in this backend and remembered until an
/// invalidation (see `Resolved::usage_for`): a compare on the hot path.
pub(super) fn authorize(name: &[u8], res: &Resolved) {
    // SAFETY: reads the current user id.
    let user = unsafe { pg_sys::GetUserId() };
    if res.usage_for == user {
        return;
    }
    // SAFETY: a backend-local flag; the callbacks are registered once, from a backend (a
    // callback only clears this backend's cache).
    unsafe {
        if !ROLE_CALLBACKS {
            for cache in [pg_sys::SysCacheIdentifier::AUTHMEMROLEMEM, pg_sys::SysCacheIdentifier::AUTHOID] {
                pg_sys::CacheRegisterSyscacheCallback(
                    crate::majors::syscache_id(cache),
                    Some(on_roles_changed),
                    pg_sys::Datum::from(0),
                );
            }
            ROLE_CALLBACKS = true;
        }
    }
    check_usage(validate_name(name), res.seqoid);
    RESOLVED.with(|r| {
        for (n, s) in r.borrow_mut().iter_mut() {
            if n == name && s.idx == res.idx && s.gen == res.gen {
                s.usage_for = user;
            }
        }
    });
}

/// Marks entry `idx` used (for the eviction sweep): a relaxed load, and a store only when the
/// sweep cleared it since.
fn touch(idx: usize) {
    let r = &space(idx).referenced;
    if !r.load(Ordering::Relaxed) {
        r.store(true, Ordering::Relaxed);
    }
}

/// The space named `name`: from this backend's cache if its entry is still the same, else
/// from the catalog, finding or claiming its shared entry.
pub(super) fn resolve(name: &[u8]) -> Resolved {
    let cached = RESOLVED.with(|r| r.borrow().iter().find(|(n, _)| n == name).map(|(_, s)| *s));
    if let Some(s) = cached {
        if s.still_valid() {
            touch(s.idx);
            return s;
        }
    }
    let res = resolve_slow(validate_name(name));
    RESOLVED.with(|r| {
        let mut r = r.borrow_mut();
        r.retain(|(n, _)| n != name);
        if r.len() >= 16 {
            r.remove(0);
        }
        r.push((name.to_vec(), res));
    });
    res
}

/// How often a first use reads the catalog again when the space's backing sequence turned out
/// to be dropped meanwhile (a concurrent keyed_drop, or a drop and a create, committed).
const RESOLVE_ATTEMPTS: usize = 3;

fn resolve_slow(name: &str) -> Resolved {
    header(); // not preloaded: 55000
    let db = my_db();
    for _attempt in 0..RESOLVE_ATTEMPTS {
        pg_sys::check_for_interrupts!();
        let cfg = {
            let _su = RunAs::superuser();
            read_config(name)
        };
        let Some(cfg) = cfg else { unknown_space(name) };
        // USAGE before anything is claimed or asked of the registry on this role's behalf: a role
        // without it takes no entry of the shared table, and no request slot nor registry round
        // trip of a registry space (keyed_next and keyed_last check it again, on the fast path).
        check_usage(name, cfg.seqoid);
        // Mostly the entry is there already (claimed by another backend, or by this one before an
        // invalidation cleared its cache): no floor is needed, and no lock beyond the spaces lock.
        let found = {
            let _g = Held::spaces();
            current(db, name, &cfg)
        };
        if let Some(res) = found {
            touch(res.idx);
            return res;
        }
        // A registry space starts each bucket above its registry mark: the marks of the primary
        // this server may have replaced (promoted before it replayed the last raises). Read
        // before the lock (they only grow, and raises by this server after this read are in its
        // own bounds, read below under the lock).
        let marks = if cfg.registry { Some(registry_marks(name)) } else { None };
        // The lock that excludes raises of the bounds (see `CLAIM_LOCK`), held from reading the
        // durable bounds to claiming with them. It waits for a keyed_drop in flight.
        lock_space(cfg.seqoid, CLAIM_LOCK);
        // SAFETY: a syscache probe by OID.
        let exists =
            unsafe { pg_sys::get_rel_relkind(cfg.seqoid) } == pg_sys::RELKIND_SEQUENCE as std::ffi::c_char;
        if !exists {
            unlock_space(cfg.seqoid, CLAIM_LOCK);
            if sequence_dropped_by_hand(name, cfg.seqoid) {
                missing_sequence(name);
            }
            // The space was dropped (and perhaps created again) by a transaction that committed
            // after the row was read: read it again.
            continue;
        }
        // A keyed_set_node (which holds a lock excluding this one until its commit) may have
        // changed the configuration since it was read: claim only with the one now committed.
        let again = {
            let _su = RunAs::superuser();
            read_config(name)
        };
        if again != Some(cfg) {
            unlock_space(cfg.seqoid, CLAIM_LOCK);
            continue;
        }
        let floors = {
            let _su = RunAs::superuser();
            super::bounds::read_all(name)
        };
        let Some(mut floors) = floors else {
            unlock_space(cfg.seqoid, CLAIM_LOCK);
            missing_bounds(name);
        };
        if let Some(marks) = &marks {
            for (f, m) in floors.iter_mut().zip(marks.iter()) {
                *f = (*f).max(*m);
            }
        }
        let floor = &floors[..];
        let mut report = None;
        let claimed = {
            let _g = Held::spaces();
            claim(db, name, &cfg, floor, None, &mut report)
        };
        let claimed = match claimed {
            Ok(res) => Ok(res),
            Err(()) => {
                // Full: free what can never be used again, then evict if still full.
                let dead = dead_entries(db);
                // SAFETY: reads the clock.
                let now = unsafe { pg_sys::GetCurrentTimestamp() };
                let _g = Held::spaces();
                claim(db, name, &cfg, floor, Some((&dead, now)), &mut report)
            }
        };
        unlock_space(cfg.seqoid, CLAIM_LOCK);
        if let Some(ev) = report {
            ev.log();
        }
        match claimed {
            Ok(res) => return res,
            Err(()) => unreachable_full(),
        }
    }
    raise(
        Code::ERRCODE_OBJECT_IN_USE,
        format!("keyed space \"{name}\" is being dropped and created again concurrently"),
        Some("Its backing sequence was dropped each time this call read the space; retry the statement."),
    )
}

/// A claim allowed to evict always finds an entry; kept as an error rather than a panic.
fn unreachable_full() -> ! {
    raise(
        Code::ERRCODE_CONFIGURATION_LIMIT_EXCEEDED,
        format!("no entry of the {MAX_SPACES} keyed space entries could be claimed"),
        None,
    )
}

/// Whether the backing sequence `seqoid` of space `name`, found missing, was dropped by hand: the
/// space's row still names it. Otherwise the space was dropped, or dropped and created again, by
/// a transaction that committed meanwhile.
fn sequence_dropped_by_hand(name: &str, seqoid: pg_sys::Oid) -> bool {
    let _su = RunAs::superuser();
    read_config(name).is_some_and(|c| c.seqoid == seqoid)
}

/// Under the spaces lock: the index of the entry of (db, name), if one is in use.
fn entry_of(db: pg_sys::Oid, name: &str) -> Option<usize> {
    let bytes = name.as_bytes();
    (0..MAX_SPACES).find(|&i| {
        let s = space(i);
        s.in_use && s.dbid == db && &s.name[..s.name_len] == bytes
    })
}

/// Under the spaces lock: the entry of (db, name) if it is backed by the configured sequence.
fn current(db: pg_sys::Oid, name: &str, cfg: &Config) -> Option<Resolved> {
    entry_of(db, name).and_then(|i| resolved_at(i, cfg))
}

/// Under the spaces lock: entry `i` (in use) if it is backed by the configured sequence.
fn resolved_at(i: usize, cfg: &Config) -> Option<Resolved> {
    let s = space(i);
    (s.seqoid == cfg.seqoid
        && s.step == cfg.step
        && s.section_size == cfg.section_size
        && s.stride == cfg.stride
        && s.registry == cfg.registry)
        .then(|| Resolved {
            idx: i,
            gen: s.gen.load(Ordering::Acquire),
            seqoid: s.seqoid,
            step: s.step,
            section_size: s.section_size,
            stride: s.stride,
            registry: s.registry,
            usage_for: pg_sys::InvalidOid,
        })
}

/// Entries that can never be used again, as (index, generation): those of databases that no
/// longer exist, and those of this database whose space has no row now or a row naming another
/// sequence (dropped by DROP EXTENSION, which runs no keyed_drop, or restored over). Read with
/// no LWLock held: the entries under the spaces lock, the databases in the syscache, this
/// database's spaces from its table. Another live database's spaces cannot be read from here.
fn dead_entries(me: pg_sys::Oid) -> Vec<(usize, u64)> {
    // copied under the lock into memory allocated before it
    let mut used: Vec<(usize, u64, pg_sys::Oid, [u8; MAX_NAME_BYTES], usize, pg_sys::Oid)> =
        Vec::with_capacity(MAX_SPACES);
    {
        let _g = Held::spaces();
        for i in 0..MAX_SPACES {
            let s = space(i);
            if s.in_use {
                used.push((i, s.gen.load(Ordering::Acquire), s.dbid, s.name, s.name_len, s.seqoid));
            }
        }
    }
    let mut rows: Vec<(Vec<u8>, Option<pg_sys::Oid>)> = Vec::new();
    {
        let _su = RunAs::superuser();
        tables::scan_extension_table(c"pg_idgen_keyed_spaces", |row| {
            if let Some(name) = row.text("space") {
                rows.push((name.into_bytes(), row.oid("seq")));
            }
        });
    }
    // SAFETY: processes pending invalidations, with no LWLock held, so that the probes below see
    // databases dropped by other backends.
    unsafe { pg_sys::AcceptInvalidationMessages() };
    let mut dbs: Vec<(pg_sys::Oid, bool)> = Vec::new();
    let mut dead = Vec::new();
    for (i, gen, db, name, name_len, seqoid) in used {
        let gone = if db == me {
            !rows.iter().any(|(n, seq)| n[..] == name[..name_len] && *seq == Some(seqoid))
        } else {
            let known = dbs.iter().find(|(d, _)| *d == db).map(|(_, e)| *e);
            let exists = known.unwrap_or_else(|| {
                // SAFETY: a syscache probe on the shared catalog pg_database, by OID, with no
                // LWLock held.
                let e =
                    unsafe { crate::majors::syscache_exists(pg_sys::SysCacheIdentifier::DATABASEOID, db) };
                dbs.push((db, e));
                e
            });
            !exists
        };
        if gone {
            dead.push((i, gen));
        }
    }
    dead
}

/// Under the spaces lock, exclusively: frees entry `i` (its generation changes, its cached keys
/// become free slots).
fn free_entry(i: usize) {
    // SAFETY: the spaces lock is held exclusively: the identity fields are ours to write.
    unsafe {
        let h = header();
        (*h).next_gen += 1;
        (*space_mut(i)).gen.store((*h).next_gen, Ordering::Release);
        (*space_mut(i)).in_use = false;
    }
}

/// Under the spaces lock, on a full table: the entry to evict. A database holding `FAIR_SHARE`
/// entries or more evicts one of its own; otherwise any database's. A clock sweep: the first
/// candidate from the hand not used since the hand last passed it (each one passed is marked
/// unused), so a space in steady use outlives those that are not. None only without candidates
/// (there is always one: the table is full). Arithmetic only.
fn victim(db: pg_sys::Oid) -> Option<usize> {
    let mine = (0..MAX_SPACES).filter(|&i| space(i).in_use && space(i).dbid == db).count();
    let candidate = |i: usize| space(i).in_use && (mine < FAIR_SHARE || space(i).dbid == db);
    // SAFETY: the spaces lock is held exclusively: the hand is ours.
    let h = unsafe { &mut *header() };
    // Two rounds: the first passes over (and marks unused) the entries used since the hand last
    // passed; the second takes the first candidate, used again meanwhile or not.
    for round in 0..2 * MAX_SPACES {
        let i = h.hand % MAX_SPACES;
        h.hand = (i + 1) % MAX_SPACES;
        if !candidate(i) {
            continue;
        }
        let r = &space(i).referenced;
        if round < MAX_SPACES && r.load(Ordering::Relaxed) {
            r.store(false, Ordering::Relaxed);
        } else {
            return Some(i);
        }
    }
    None
}

/// How often at most the eviction of live spaces is logged (timestamptz microseconds).
const EVICTION_LOG_INTERVAL: i64 = 60_000_000;

/// An eviction of a live space to log (copied under the spaces lock, logged after it).
struct Eviction {
    dbid: pg_sys::Oid,
    name: [u8; MAX_NAME_BYTES],
    name_len: usize,
    since_last: u64,
}

impl Eviction {
    fn log(&self) {
        crate::errors::log_with_hint(
            &format!(
                "pg_idgen: more than {MAX_SPACES} keyed spaces are in use in the instance: the shared entry of space \"{}\" of database {} was evicted, with {} other evictions since the last such message",
                String::from_utf8_lossy(&self.name[..self.name_len]),
                self.dbid.to_u32(),
                self.since_last - 1,
            ),
            &format!("An evicted space continues above its durable bound when it is used again (a gap in every key's numbers, as after a restart). Drop spaces, or databases, that are no longer used; a database holding {FAIR_SHARE} entries or more evicts its own spaces first."),
        );
    }
}

/// Under the spaces lock, exclusively: counts an eviction of entry `i`, and returns what to log
/// if the last message is `EVICTION_LOG_INTERVAL` old. Arithmetic only.
fn note_eviction(i: usize, now: i64) -> Option<Eviction> {
    // SAFETY: the spaces lock is held exclusively: the counters are ours.
    let h = unsafe { &mut *header() };
    h.evictions += 1;
    if h.last_eviction_log != 0 && now.saturating_sub(h.last_eviction_log) < EVICTION_LOG_INTERVAL {
        return None;
    }
    h.last_eviction_log = now;
    let since_last = h.evictions - h.evictions_logged;
    h.evictions_logged = h.evictions;
    let s = space(i);
    Some(Eviction { dbid: s.dbid, name: s.name, name_len: s.name_len, since_last })
}

/// Under the spaces lock: the entry of (db, name) if it is backed by the configured sequence,
/// else that entry re-initialised, else a free entry claimed. With `full` (the table was found
/// full: the dead entries found since, and the time), dead entries are freed first, and if none
/// is free then, one is evicted (`victim`; `report` is set when that is to be logged). Err when
/// no entry is free and `full` is None. Arithmetic only.
fn claim(
    db: pg_sys::Oid,
    name: &str,
    cfg: &Config,
    floors: &[i64],
    full: Option<(&[(usize, u64)], i64)>,
    report: &mut Option<Eviction>,
) -> Result<Resolved, ()> {
    let mine = entry_of(db, name);
    if let Some(res) = mine.and_then(|i| resolved_at(i, cfg)) {
        return Ok(res);
    }
    let free = || (0..MAX_SPACES).find(|&i| !space(i).in_use);
    let mut i = mine.or_else(free);
    if i.is_none() {
        let Some((dead, now)) = full else { return Err(()) };
        for &(d, gen) in dead {
            if space(d).in_use && space(d).gen.load(Ordering::Acquire) == gen {
                free_entry(d);
            }
        }
        i = free();
        if i.is_none() {
            i = victim(db);
            if let Some(v) = i {
                *report = note_eviction(v, now);
                free_entry(v);
            }
        }
    }
    let Some(i) = i else { return Err(()) };
    let bytes = name.as_bytes();
    // SAFETY: the spaces lock is held exclusively: the identity fields are ours to write.
    unsafe {
        let h = header();
        (*h).next_gen += 1;
        let gen = (*h).next_gen;
        let s = space_mut(i);
        // The generation first: a backend of the old one that reads the new floor or bound
        // (released after this) then sees its generation changed (`next_n` checks it again).
        (*s).gen.store(gen, Ordering::Release);
        (*s).in_use = true;
        (*s).dbid = db;
        (*s).name_len = bytes.len();
        (&mut (*s).name)[..bytes.len()].copy_from_slice(bytes);
        (*s).seqoid = cfg.seqoid;
        (*s).step = cfg.step;
        (*s).section_size = cfg.section_size;
        (*s).stride = cfg.stride;
        (*s).registry = cfg.registry;
        for (b, &f) in floors.iter().enumerate().take(super::table::BUCKETS) {
            (*s).bounds[b].store(f, Ordering::Release);
            (*s).floors[b].store(f, Ordering::Release);
        }
        (*s).raises.store(0, Ordering::Relaxed);
        (*s).referenced.store(true, Ordering::Relaxed);
        Ok(Resolved {
            idx: i,
            gen,
            seqoid: cfg.seqoid,
            step: cfg.step,
            section_size: cfg.section_size,
            stride: cfg.stride,
            registry: cfg.registry,
            usage_for: pg_sys::InvalidOid,
        })
    }
}

/// Releases the entry of (db, name), if any: its cached keys become free slots.
pub(super) fn release(db: pg_sys::Oid, name: &str) {
    if crate::keyed::table::header_or_null().is_null() {
        return;
    }
    let bytes = name.as_bytes();
    let _g = Held::spaces();
    for i in 0..MAX_SPACES {
        let s = space(i);
        if s.in_use && s.dbid == db && &s.name[..s.name_len] == bytes {
            free_entry(i);
        }
    }
}

pub(super) fn check_writable() {
    // SAFETY: flags of this backend and its transaction.
    if unsafe { pg_sys::RecoveryInProgress() } {
        raise(
            Code::ERRCODE_READ_ONLY_SQL_TRANSACTION,
            "cannot hand out keyed sequence values on a standby server",
            Some("keyed_next() raises its durable bound when it needs to, which needs a writable primary; call it on the primary, or after promotion."),
        );
    }
    if unsafe { pg_sys::XactReadOnly } {
        raise(
            Code::ERRCODE_READ_ONLY_SQL_TRANSACTION,
            "cannot raise a keyed space's bound in a read-only transaction",
            Some("keyed_next() persists a new bound when its keys reach the old one, like nextval(); call it in a read-write transaction."),
        );
    }
}

/// Raises the durable bound of bucket `bucket` of the space to at least `need`: in place, a
/// whole number of steps, or to the top of the node's class when a whole step would pass it
/// (`raised_bound`, `bounds::raise_in_place`), the WAL flushed and synchronous standbys
/// waited for, and only then the shared bound of the bucket raised. Raises of one bucket are
/// serialised by the row's buffer lock, so backends that reach the bound together raise it
/// once: the others find it raised. Raises exclude claims of the space (`RAISE_LOCK`). Runs
/// with no LWLock held. A space released meanwhile is left alone (the caller resolves it again).
pub(super) fn raise_bound(res: &Resolved, name: &str, bucket: usize, need: i64) {
    check_writable();
    let s = space(res.idx);
    lock_space(res.seqoid, RAISE_LOCK);
    // SAFETY: a syscache probe by OID.
    let exists =
        unsafe { pg_sys::get_rel_relkind(res.seqoid) } == pg_sys::RELKIND_SEQUENCE as std::ffi::c_char;
    if !exists || !res.still_valid() {
        unlock_space(res.seqoid, RAISE_LOCK);
        if !exists && res.still_valid() && sequence_dropped_by_hand(name, res.seqoid) {
            missing_sequence(name);
        }
        // Released, or dropped (and perhaps created again) by a transaction that committed while
        // this call waited for the lock, before its release: the caller resolves the space again.
        forget(name.as_bytes());
        return;
    }
    if s.bounds[bucket].load(Ordering::Acquire) >= need {
        // raised by another backend meanwhile
        unlock_space(res.seqoid, RAISE_LOCK);
        return;
    }
    let got = {
        let _su = RunAs::superuser();
        super::bounds::raise_in_place(name, bucket, |old| {
            pg_idgen_core::keyed::raised_bound(old, need, res.step, res.stride.limit)
        })
    };
    let Some(v) = got else {
        unlock_space(res.seqoid, RAISE_LOCK);
        missing_bounds(name);
    };
    s.raises.fetch_add(1, Ordering::Relaxed);
    // Everything inserted so far: our record, or the earlier record (possibly another backend's,
    // still unflushed) that wrote the bound we found.
    crate::segment::durable::flush_wal_and_wait_for_sync_standbys_for("a keyed space's new bound");
    if res.registry {
        // The registry's mark too, before any value above the old bound is handed out: a
        // standby promoted before it replayed the raise continues above it.
        if let Err(e) = raise_mark(name, bucket, v) {
            unlock_space(res.seqoid, RAISE_LOCK);
            registry_failed(name, &e, true);
        }
    }
    {
        // Under the spaces lock: the entry may have been released and claimed by another space
        // since, whose bound this value is not (claims write the generation and the bounds
        // under that lock).
        let _g = Held::spaces();
        if res.still_valid() {
            s.bounds[bucket].fetch_max(v, Ordering::AcqRel);
        }
    }
    unlock_space(res.seqoid, RAISE_LOCK);
}

/// The registry marks of a registry space by bucket (0 where none), or 55000.
fn registry_marks(name: &str) -> Vec<i64> {
    match super::marks::call(name, &[]) {
        Ok(m) => m,
        Err(e) => registry_failed(name, &e, false),
    }
}

/// Raises the registry mark of `bucket` of a registry space to `bound`: Err unless the registry
/// confirmed a mark at least that high.
fn raise_mark(name: &str, bucket: usize, bound: i64) -> Result<(), String> {
    let m = super::marks::call(name, &[(bucket, bound)])?;
    match m.get(bucket) {
        Some(&got) if got >= bound => Ok(()),
        got => Err(format!(
            "the registry's mark of bucket {bucket} is {} after a raise to {bound}",
            got.copied().unwrap_or(0)
        )),
    }
}

/// The registry did not answer for a registry space: 55000, nothing handed out above the bounds
/// already raised (`raise`: a raise; else the first use after a start, promotion or eviction).
fn registry_failed(name: &str, why: &str, raise_: bool) -> ! {
    crate::errors::raise_full(
        Code::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
        if raise_ {
            format!("keyed space \"{name}\" cannot raise its bound: the registry did not confirm it")
        } else {
            format!("keyed space \"{name}\" cannot be used yet: the registry's marks of its bounds could not be read")
        },
        Some(format!("{why}.")),
        Some(if raise_ {
            "The space was created with registry => true: values above a bound are handed out only once the lease registry (pg_idgen.registry) has the new bound; values below the bounds already raised go on. Retry when the registry answers; see SELECT * FROM snowflake_lease() and the server log."
        } else {
            "The space was created with registry => true: its first use after a start, a promotion or an eviction reads its marks from the lease registry (pg_idgen.registry). Retry when the registry answers; see SELECT * FROM snowflake_lease() and the server log."
        }),
    )
}
