//! Finding, claiming and releasing a tag's entry in the shared table (the slow path of a
//! backend's first use of a tag, and what drop, create and set do). Follows the locking
//! protocol of [`super::table`].

use pg_idgen_core::segment::Buffers;
use pgrx::pg_sys;

use super::config::{read_config, TagConfig};
use super::errors::{missing_sequence, unknown_tag};
use super::table::{entry_ptr, header, my_db, Entry, Header, Held, HEADER, MAX_TAG_BYTES};
use crate::catalog::relation_exists_locked;
use crate::errors::{raise, Code};

pub(super) unsafe fn entry_matches(e: *const Entry, db: pg_sys::Oid, tag: &[u8]) -> bool {
    // SAFETY: identity fields are read under the table lock; `e` is a valid entry.
    unsafe {
        let e = &*e;
        e.in_use && e.dbid == db && &e.tag[..e.tag_len] == tag
    }
}

/// Where a tag's values come from.
pub(super) enum Found {
    /// Entry `idx` of the shared table, with generation `gen`.
    Shared(usize, u64),
    /// The tag was created by this transaction: this backend's private buffer (see `hot`).
    Uncommitted(TagConfig),
}

/// Finds the entry of (this database, tag), claiming one on first use. Slow path.
pub(super) fn find_or_claim(tag: &str) -> Found {
    let h = header();
    let db = my_db();
    // SAFETY: `h` is the live header; capacity never changes after startup.
    let cap = unsafe { (*h).capacity };
    for _attempt in 0..3 {
        let found = {
            // Identity fields change only under the table lock held exclusively: shared suffices.
            let _t = Held::table_shared();
            (0..cap).find_map(|i| {
                let e = entry_ptr(i);
                // SAFETY: identity fields are read under the table lock (see the protocol).
                unsafe { entry_matches(e, db, tag.as_bytes()).then(|| (i, (*e).generation, (*e).seqoid)) }
            })
        };
        // Read the catalog with no LWLock held. An entry found above must belong to the tag
        // the catalog has now: after DROP EXTENSION (which runs no segment_drop) and a new
        // CREATE EXTENSION, or pg_restore --clean, an entry of the dropped tag may still be
        // there, with values reserved from a sequence that no longer exists — serving them would
        // hand out numbers the re-created tag hands out again.
        let cfg = read_config(tag);
        if let Some((idx, gen, seqoid)) = found {
            if cfg.as_ref().is_some_and(|c| c.seqoid == seqoid && !c.uncommitted) {
                return Found::Shared(idx, gen);
            }
            release_claim(idx, gen); // a dropped tag's entry: never used again
            continue;
        }
        // Not in shared memory yet.
        let Some(cfg) = cfg else { unknown_tag(tag) };
        if cfg.uncommitted {
            // Created by this transaction: no shared entry until it commits (a rolled-back
            // savepoint or prepared transaction would leave one behind for a tag that does not
            // exist); values come from this backend alone meanwhile.
            return Found::Uncommitted(cfg);
        }
        let claimed = claim(tag, &cfg).or_else(|| {
            // Full: entries of dropped databases and of this database's dropped tags can be reused;
            // if none, an entry in use is evicted (no role can fill the table for the others).
            if reclaim_dead_entries() {
                if let Some(c) = claim(tag, &cfg) {
                    return Some(c);
                }
            }
            claim_evicting(tag, &cfg)
        });
        let Some((idx, gen)) = claimed else {
            raise(
                Code::ERRCODE_CONFIGURATION_LIMIT_EXCEEDED,
                format!("the shared segment table is full: all {cap} entries are in use"),
                Some(&format!("This database holds {} entries or more (a quarter of pg_idgen.max_segments), so its new tags do not evict others: drop its tags no longer used (segment_drop), or raise pg_idgen.max_segments (takes a server restart).", fair_share(cap))),
            )
        };
        // The row read may belong to a tag whose drop committed after it was read, and whose
        // release (at that commit) ran before the claim: the entry would point at a dropped
        // sequence for every backend. Waiting for a lock on the sequence waits for such a drop
        // to finish; if the sequence is gone, undo the claim and read the catalog again.
        if relation_exists_locked(cfg.seqoid, pg_sys::AccessShareLock) {
            return Found::Shared(idx, gen);
        }
        release_claim(idx, gen);
        // Not a concurrent drop if the row is still there, unchanged: its sequence was dropped
        // by hand (the owner of the extension's schema can), or never restored.
        if read_config(tag).is_some_and(|c| c.seqoid == cfg.seqoid) {
            missing_sequence(cfg.seqoid);
        }
    }
    raise(
        Code::ERRCODE_OBJECT_IN_USE,
        format!("segment tag \"{tag}\" is being dropped and re-created concurrently"),
        Some("Retry the statement."),
    )
}

/// Frees the entries that can never be used again; true if it freed any: entries of databases
/// that no longer exist, and entries of this database whose backing sequence no longer exists
/// (its tag was dropped with `DROP EXTENSION pg_idgen`, which runs no `segment_drop`, or its
/// sequence was dropped by hand). Existence is checked in the syscache (the current catalog
/// state, not the caller's snapshot); other databases' relations cannot be seen from here.
pub(super) fn reclaim_dead_entries() -> bool {
    let h = header();
    let me = my_db();
    // SAFETY: as above.
    let cap = unsafe { (*h).capacity };
    let (mut dbs, mine): (Vec<pg_sys::Oid>, Vec<pg_sys::Oid>) = {
        let _t = Held::table_shared();
        let used: Vec<(pg_sys::Oid, pg_sys::Oid)> = (0..cap)
            .filter_map(|i| {
                let e = entry_ptr(i);
                // SAFETY: identity fields are read under the table lock.
                unsafe { (*e).in_use.then_some(((*e).dbid, (*e).seqoid)) }
            })
            .collect();
        (
            used.iter().map(|(db, _)| *db).collect(),
            used.iter().filter(|(db, _)| *db == me).map(|(_, seq)| *seq).collect(),
        )
    };
    dbs.sort_unstable_by_key(|o| u32::from(*o));
    dbs.dedup();
    let exists = |cache: pg_sys::SysCacheIdentifier::Type, oid: pg_sys::Oid| {
        // SAFETY: a syscache probe is plain catalog access, done with no LWLock held.
        unsafe { crate::majors::syscache_exists(cache, oid) }
    };
    // SAFETY: processes pending invalidations, with no LWLock held, so that the probes below
    // see drops committed by other backends.
    unsafe { pg_sys::AcceptInvalidationMessages() };
    let dead_dbs: Vec<pg_sys::Oid> =
        dbs.into_iter().filter(|db| !exists(pg_sys::SysCacheIdentifier::DATABASEOID, *db)).collect();
    let dead_seqs: Vec<pg_sys::Oid> =
        mine.into_iter().filter(|seq| !exists(pg_sys::SysCacheIdentifier::RELOID, *seq)).collect();
    if dead_dbs.is_empty() && dead_seqs.is_empty() {
        return false;
    }
    let _t = Held::table();
    for i in 0..cap {
        let _g = Held::entry(i);
        let e = entry_ptr(i);
        // SAFETY: identity fields are written with both the table and the entry lock held.
        unsafe {
            if (*e).in_use
                && (dead_dbs.contains(&(*e).dbid) || ((*e).dbid == me && dead_seqs.contains(&(*e).seqoid)))
            {
                free_entry(h, e);
            }
        }
    }
    true
}

/// Undoes a claim of entry `idx` made with generation `gen`, unless it changed meanwhile.
pub(super) fn release_claim(idx: usize, gen: u64) {
    let h = header();
    let _t = Held::table();
    let _g = Held::entry(idx);
    let e = entry_ptr(idx);
    // SAFETY: identity fields are written with both the table and the entry lock held.
    unsafe {
        if (*e).in_use && (*e).generation == gen {
            free_entry(h, e);
        }
    }
}

/// Claims a free entry for (this database, tag), unless another backend claimed one meanwhile.
/// None when the table is full.
pub(super) fn claim(tag: &str, cfg: &TagConfig) -> Option<(usize, u64)> {
    let h = header();
    let db = my_db();
    // SAFETY: as above.
    let cap = unsafe { (*h).capacity };
    let _t = Held::table();
    let found = (0..cap).find_map(|i| {
        let _g = Held::entry(i);
        let e = entry_ptr(i);
        // SAFETY: identity fields are read under the table and entry locks.
        unsafe { entry_matches(e, db, tag.as_bytes()).then(|| (i, (*e).generation)) }
    });
    if found.is_some() {
        return found; // claimed meanwhile
    }
    for i in 0..cap {
        let _g = Held::entry(i);
        let e = entry_ptr(i);
        // SAFETY: the table lock is held exclusively and the entry lock too.
        if unsafe { (*e).in_use } {
            continue;
        }
        // SAFETY: as above.
        return Some((i, unsafe { write_entry(h, e, db, tag, cfg) }));
    }
    None
}

/// Claims an entry for (this database, tag) on a full table by evicting one in use: a clock sweep
/// from the hand that passes over (and marks) entries that handed out values since it last
/// passed them. Only a database holding less than a quarter of the entries evicts (so that no
/// role, however many databases it creates, can keep another database from its share); a
/// database holding more gets None (53400: its own tags fill its share).
pub(super) fn claim_evicting(tag: &str, cfg: &TagConfig) -> Option<(usize, u64)> {
    let h = header();
    let db = my_db();
    // SAFETY: as above.
    let cap = unsafe { (*h).capacity };
    // SAFETY: reads the clock, before any lock.
    let now = unsafe { pg_sys::GetCurrentTimestamp() };
    let mut report = None;
    let claimed = {
        let _t = Held::table();
        // the identity fields (dbid, in_use) are read under the table lock
        let mine = (0..cap)
            // SAFETY: identity fields are read under the table lock.
            .filter(|&i| unsafe { (*entry_ptr(i)).in_use && (*entry_ptr(i)).dbid == db })
            .count();
        let mut found = None;
        let may_evict = mine < fair_share(cap);
        // Two rounds: the first passes over (and marks) the entries used since the hand last
        // passed; the second evicts the first candidate, used or not.
        for round in 0..2 * cap {
            // SAFETY: the table lock is held exclusively: the hand is ours.
            let i = unsafe {
                let i = (*h).hand % cap;
                (*h).hand = (i + 1) % cap;
                i
            };
            let _g = Held::entry(i);
            let e = entry_ptr(i);
            // SAFETY: the table lock and the entry lock are held: every field is ours to read and
            // write; the entry may be rewritten whole.
            unsafe {
                if entry_matches(e, db, tag.as_bytes()) {
                    found = Some((i, (*e).generation)); // claimed meanwhile
                    break;
                }
                if !(*e).in_use {
                    found = Some((i, write_entry(h, e, db, tag, cfg)));
                    break;
                }
                if !may_evict {
                    continue;
                }
                if round < cap && (*e).swept_issued != (*e).issued {
                    (*e).swept_issued = (*e).issued;
                    continue;
                }
                (*h).evictions += 1;
                if (*h).last_eviction_log == 0 || now.saturating_sub((*h).last_eviction_log) >= 60_000_000 {
                    report =
                        Some(((*e).dbid, (*e).tag, (*e).tag_len, (*h).evictions - (*h).evictions_logged));
                    (*h).last_eviction_log = now;
                    (*h).evictions_logged = (*h).evictions;
                }
                free_entry(h, e);
                found = Some((i, write_entry(h, e, db, tag, cfg)));
                break;
            }
        }
        found
    };
    if let Some((victim_db, vtag, vlen, n)) = report {
        crate::errors::log_with_hint(
            &format!(
                "pg_idgen: the shared segment table is full ({cap} entries): the entry of tag \"{}\" of database {} was evicted, with {} other evictions since the last such message",
                String::from_utf8_lossy(&vtag[..vlen.min(MAX_TAG_BYTES)]),
                victim_db.to_u32(),
                n - 1
            ),
            "An evicted tag skips its cached values when it is used again (a gap, as after segment_set). Raise pg_idgen.max_segments (takes a server restart), or drop tags or databases no longer used.",
        );
    }
    claimed
}

/// Entries a database may hold and still evict another's on a full table: a quarter of them.
pub(super) fn fair_share(cap: usize) -> usize {
    (cap / 4).max(1)
}

/// Writes a new entry for (db, tag) into `e`; returns its generation. Caller holds the table
/// lock exclusively and the entry's lock, and `e` is free.
unsafe fn write_entry(h: *mut Header, e: *mut Entry, db: pg_sys::Oid, tag: &str, cfg: &TagConfig) -> u64 {
    // SAFETY: the table lock is held exclusively and the entry lock too: the entry may be
    // rewritten whole (see the protocol); its condition variable lives outside it.
    unsafe {
        (*h).next_gen += 1;
        let gen = (*h).next_gen;
        std::ptr::write(
            e,
            Entry {
                in_use: true,
                generation: gen,
                dbid: db,
                tag_len: tag.len(),
                tag: [0; MAX_TAG_BYTES],
                seqoid: cfg.seqoid,
                unit: cfg.unit,
                stride: cfg.stride,
                mult: cfg.mult,
                min_m: cfg.min_m,
                max_m: cfg.max_m,
                target_ms: cfg.target_ms,
                bufs: Buffers::default(),
                slotted: cfg.slotted,
                start: cfg.start,
                slots: cfg.slots,
                slot_high: [i64::MIN; super::table::MAX_SLOTS],
                slot_refills: [0; super::table::MAX_SLOTS],
                registry: cfg.registry,
                marks_read: false,
                refilling: false,
                ahead_failed: false,
                issued: 0,
                refills: 0,
                sync_refills: 0,
                discarded: 0,
                last_refill_ms: 0,
                swept_issued: -1,
            },
        );
        (&mut (*e).tag)[..tag.len()].copy_from_slice(tag.as_bytes());
        gen
    }
}

/// Releases the entry of (db, tag) if it is in shared memory: its cached values are dropped
/// (gaps) and backends holding its index see the generation change.
pub(super) fn release(db: pg_sys::Oid, tag: &str) {
    // SAFETY: HEADER is set once at startup.
    if unsafe { HEADER.is_null() } {
        return;
    }
    let h = header();
    let _t = Held::table();
    // SAFETY: as above.
    for i in 0..unsafe { (*h).capacity } {
        let _g = Held::entry(i);
        let e = entry_ptr(i);
        // SAFETY: identity fields are written with both the table and the entry lock held.
        unsafe {
            if entry_matches(e, db, tag.as_bytes()) {
                free_entry(h, e);
            }
        }
    }
}

/// Marks entry `e` free and gives it a new generation, so that backends caching its index see the
/// change. Caller holds the table lock exclusively and the entry's lock.
unsafe fn free_entry(h: *mut Header, e: *mut Entry) {
    // SAFETY: as the caller promises; `h` and `e` point into the shared table.
    unsafe {
        (*e).in_use = false;
        (*h).next_gen += 1;
        (*e).generation = (*h).next_gen;
    }
}
