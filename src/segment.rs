//! Segment sequences (SPEC §6): dense 64-bit counters per tag, handed out from shared memory in
//! durable batches ("segments"), Meituan Leaf's segment mode with its double buffer.
//!
//! Durability design. Each tag is backed by a real PostgreSQL sequence (created by
//! `segment_create`, named `pg_idgen_seg_<n>` in the extension's schema) with
//! `INCREMENT BY nodes*unit START start + node_index*unit`: one `nextval` reserves one *chunk* of
//! `unit` values. A reservation calls `nextval_oid` directly (non-transactional: a ROLLBACK of the
//! caller does not give it back), then `XLogFlush`es the WAL inserted so far (the sequence's
//! WAL record, which PostgreSQL writes ahead of the value, or the record of another backend's
//! reservation that covers it) and waits for synchronous standbys if any are configured — all
//! before a value of the chunk is handed out. Sequences are WAL-logged (crash recovery,
//! streaming standbys) and, created at run time, are not extension members, so pg_dump dumps them
//! with their current value; the tag metadata lives in `pg_idgen_segments`, registered with
//! `pg_extension_config_dump`. A restart only forgets the cached remainder (gaps, never reuse).
//!
//! Locking protocol (read this before touching anything below):
//!
//! * One named LWLock tranche "pg_idgen segments" with `max_segments + 1` locks: lock 0 (the
//!   *table lock*) guards claiming and releasing entries; lock `i + 1` (the *entry lock*) guards
//!   everything mutable in entry `i`: the double buffer, the current step, `refilling` and the
//!   statistics are read and written only with the entry lock held. The identity of an entry
//!   (`in_use`, `generation`, `dbid`, the tag, the configuration) is written only with *both*
//!   the table lock (exclusive) and the entry lock held, so it may be read holding either (a
//!   backend's first use of a tag scans the table under the table lock in shared mode). The
//!   table lock is always taken *before* an entry lock, never the other way round.
//! * Nothing but arithmetic happens under an entry lock: no SPI, no catalog access, no I/O, no
//!   palloc, no ERROR. Reservations (nextval, WAL flush) run with no LWLock held; the result is
//!   then installed under the entry lock (`Buffers::install` only accepts a segment entirely above
//!   everything installed before, so concurrent reservations can never make values go back).
//! * A backend caches (tag -> entry index, generation). `generation` changes whenever an entry is
//!   released or claimed, so a stale index (drop + create, set) is detected under the entry lock.
//! * `refilling` (under the entry lock) elects one backend for the asynchronous refill; it is only
//!   a hint: a backend that finds both buffers empty reserves synchronously regardless, so a
//!   refiller that died cannot stall the tag.

use std::ffi::CStr;

use pg_idgen_core::segment::{chunk_at_or_above, next_multiple, Buffers, Segment, Take};
use pgrx::pg_sys;
use pgrx::prelude::*;

use crate::catalog::{
    extension_schema, qualified_relation_name, relation_exists_locked, select_latest_i64, AsSuperuser,
};
use crate::errors::{raise, raise_full, required, Code};
use crate::layouts::{monotonic_ms, ms_to_timestamptz, now_unix_ms};
use crate::shmem::LockGuard;

const SHMEM_NAME: &CStr = c"pg_idgen segment table";
const TRANCHE_NAME: &CStr = c"pg_idgen segments";
/// Longest tag, in bytes (an identifier's length, NAMEDATALEN - 1).
pub const MAX_TAG_BYTES: usize = 63;
/// Largest step (values per segment).
pub const MAX_STEP: i32 = 100_000_000;
/// Largest `nodes`.
pub const MAX_NODES: i32 = 1024;
/// Largest `max_step / min_step`: a reservation calls nextval once per unit.
pub const MAX_MULTIPLE: i64 = 1024;

#[repr(C, align(64))]
struct Entry {
    in_use: bool,
    generation: u64,
    dbid: pg_sys::Oid,
    tag_len: usize,
    tag: [u8; MAX_TAG_BYTES],
    seqoid: pg_sys::Oid,
    unit: i64,
    stride: i64,
    /// Current step = mult * unit; mult within [min_m, max_m]; target_ms 0 = fixed step.
    mult: i64,
    min_m: i64,
    max_m: i64,
    target_ms: i64,
    bufs: Buffers,
    /// A backend is reserving the next segment ahead of need (elected under the entry lock).
    refilling: bool,
    /// The last reservation made ahead of need failed: serve what is left and reserve again
    /// only when both buffers are empty (that reservation reports the error).
    ahead_failed: bool,
    issued: i64,
    refills: i64,
    sync_refills: i64,
    discarded: i64,
    last_refill_ms: i64,
}

#[repr(C)]
struct Header {
    locks: *mut pg_sys::LWLockPadded,
    capacity: usize,
    /// Last generation handed out (under the table lock).
    next_gen: u64,
}

static mut HEADER: *mut Header = std::ptr::null_mut();
static mut ENTRIES: *mut Entry = std::ptr::null_mut();
/// One condition variable per entry, outside `Entry` because an entry is rewritten whole when it
/// is claimed while a backend may still sleep on its variable: backends whose caller found both
/// buffers empty sleep on it until the refill in flight ends.
static mut CVS: *mut pg_sys::ConditionVariable = std::ptr::null_mut();

fn capacity_setting() -> usize {
    crate::gucs::MAX_SEGMENTS.get().max(1) as usize
}

fn entries_offset() -> usize {
    std::mem::size_of::<Header>().next_multiple_of(64)
}

fn cvs_offset() -> usize {
    (entries_offset() + capacity_setting() * std::mem::size_of::<Entry>()).next_multiple_of(64)
}

fn shmem_size() -> usize {
    cvs_offset() + capacity_setting() * std::mem::size_of::<pg_sys::ConditionVariable>() + 64
}

/// From the shared-memory request hook: space for the table and its lock tranche.
pub unsafe fn request_shmem() {
    // SAFETY: called from the shmem request hook in the postmaster, as PostgreSQL requires.
    unsafe {
        pg_sys::RequestAddinShmemSpace(shmem_size());
        pg_sys::RequestNamedLWLockTranche(TRANCHE_NAME.as_ptr(), (capacity_setting() + 1) as i32);
    }
}

/// From the shared-memory startup hook, with AddinShmemInitLock held: create or attach the table.
pub unsafe fn attach_shmem() {
    // SAFETY: called from the shmem startup hook with AddinShmemInitLock held; the table is
    // created once (zeroed = all entries free) and its locks and condition variables set up.
    unsafe {
        let mut found = false;
        let base = pg_sys::ShmemInitStruct(SHMEM_NAME.as_ptr(), shmem_size(), &mut found).cast::<u8>();
        let header = base.cast::<Header>();
        if !found {
            // Zeroed memory is a valid table of free entries.
            std::ptr::write_bytes(base, 0, shmem_size());
            (*header).locks = pg_sys::GetNamedLWLockTranche(TRANCHE_NAME.as_ptr());
            (*header).capacity = capacity_setting();
            let cvs = base.add(cvs_offset()).cast::<pg_sys::ConditionVariable>();
            for i in 0..capacity_setting() {
                pg_sys::ConditionVariableInit(cvs.add(i));
            }
        }
        HEADER = header;
        ENTRIES = base.add(entries_offset()).cast::<Entry>();
        CVS = base.add(cvs_offset()).cast::<pg_sys::ConditionVariable>();
    }
}

fn header() -> *mut Header {
    // SAFETY: HEADER is set once at startup and never changes; null means not preloaded.
    let h = unsafe { HEADER };
    if h.is_null() {
        crate::errors::not_preloaded();
    }
    h
}

fn entry_ptr(idx: usize) -> *mut Entry {
    // SAFETY: `idx` < capacity at every call site; ENTRIES is set before any backend runs.
    unsafe { ENTRIES.add(idx) }
}

fn cv_ptr(idx: usize) -> *mut pg_sys::ConditionVariable {
    // SAFETY: as for `entry_ptr`.
    unsafe { CVS.add(idx) }
}

/// The segment table's locks: lock 0 guards the table, lock `i + 1` entry `i`.
struct Held;

impl Held {
    fn table() -> LockGuard {
        Held::lock_mode(0, pg_sys::LWLockMode::LW_EXCLUSIVE)
    }
    fn entry(idx: usize) -> LockGuard {
        Held::lock_mode(idx + 1, pg_sys::LWLockMode::LW_EXCLUSIVE)
    }
    fn table_shared() -> LockGuard {
        Held::lock_mode(0, pg_sys::LWLockMode::LW_SHARED)
    }
    fn lock_mode(i: usize, mode: pg_sys::LWLockMode::Type) -> LockGuard {
        // SAFETY: `i` <= capacity; the tranche has capacity + 1 locks (see request_shmem).
        LockGuard::acquire(unsafe { &raw mut (*(*header()).locks.add(i)).lock }, mode)
    }
}

fn my_db() -> pg_sys::Oid {
    unsafe { pg_sys::MyDatabaseId }
}

fn check_not_standby() {
    if unsafe { pg_sys::RecoveryInProgress() } {
        raise(
            Code::ERRCODE_READ_ONLY_SQL_TRANSACTION,
            "cannot hand out segment values on a standby server",
            Some("segment_next() reserves values durably, which needs a writable primary; call it on the primary, or after promotion."),
        );
    }
}

fn validate_tag(tag: &str) {
    if tag.is_empty() {
        raise(Code::ERRCODE_INVALID_PARAMETER_VALUE, "segment tag must not be empty", None);
    }
    if tag.len() > MAX_TAG_BYTES {
        raise(
            Code::ERRCODE_NAME_TOO_LONG,
            format!("segment tag is too long ({} bytes)", tag.len()),
            Some("A tag can have at most 63 bytes."),
        );
    }
}

fn unknown_tag(tag: &str) -> ! {
    raise(
        Code::ERRCODE_UNDEFINED_OBJECT,
        format!("segment tag \"{tag}\" does not exist"),
        Some("Create it with segment_create(tag) (as a superuser); SELECT tag FROM segment_status lists the tags of this database."),
    )
}

/// A tag's row of pg_idgen_segments, as the hot path needs it.
struct TagConfig {
    seqoid: pg_sys::Oid,
    unit: i64,
    stride: i64,
    mult: i64,
    min_m: i64,
    max_m: i64,
    target_ms: i64,
}

/// Reads a tag's row with the latest committed state (not the caller's snapshot, which in a
/// REPEATABLE READ transaction may predate a drop and re-create of the tag), and checks it as
/// the hot path needs it: a row edited by hand cannot make it divide by zero or allocate
/// without bound.
fn read_config(tag: &str) -> Option<TagConfig> {
    let _su = AsSuperuser::new();
    let sql = std::ffi::CString::new(format!(
        "SELECT seq::pg_catalog.oid::pg_catalog.int8, unit::pg_catalog.int8, \
                nodes::pg_catalog.int8, step::pg_catalog.int8, \
                COALESCE(min_step, step)::pg_catalog.int8, \
                COALESCE(max_step, step)::pg_catalog.int8, \
                COALESCE(pg_catalog.date_part('epoch', target_interval) \
                    OPERATOR(pg_catalog.*) 1000, 0)::pg_catalog.int8 \
         FROM {}.pg_idgen_segments WHERE tag OPERATOR(pg_catalog.=) $1",
        extension_schema()
    ))
    .expect("no NUL in a generated statement");
    let rows = select_latest_i64(&sql, tag);
    let row = rows.into_iter().next()?;
    let v = |i: usize| row.get(i).copied().flatten();
    let corrupt = |what: &str| -> ! {
        raise(
            Code::ERRCODE_DATA_CORRUPTED,
            format!("the configuration of segment tag \"{tag}\" in pg_idgen_segments is invalid: {what}"),
            Some("pg_idgen_segments is written by segment_create(); drop the tag and create it again."),
        )
    };
    let (Some(seq), Some(unit), Some(nodes), Some(step), Some(min_step), Some(max_step), Some(target_ms)) =
        (v(0), v(1), v(2), v(3), v(4), v(5), v(6))
    else {
        corrupt("a required column is NULL")
    };
    if unit <= 0 || !(1..=MAX_NODES as i64).contains(&nodes) {
        corrupt(&format!("unit {unit}, nodes {nodes}"));
    }
    if min_step != unit || step % unit != 0 || max_step % unit != 0 {
        corrupt("step, min_step and max_step must be multiples of the unit (min_step)");
    }
    let (mult, min_m, max_m) = (step / unit, min_step / unit, max_step / unit);
    if !(1 <= min_m && min_m <= mult && mult <= max_m && max_m <= MAX_MULTIPLE) {
        corrupt(&format!("step {step} outside [{min_step}, {max_step}] or more than {MAX_MULTIPLE} units"));
    }
    Some(TagConfig {
        seqoid: pg_sys::Oid::from(u32::try_from(seq).unwrap_or_else(|_| corrupt("seq"))),
        unit,
        stride: nodes * unit,
        mult,
        min_m,
        max_m,
        target_ms: target_ms.max(0),
    })
}

unsafe fn entry_matches(e: *const Entry, db: pg_sys::Oid, tag: &[u8]) -> bool {
    // SAFETY: identity fields are read under the table lock; `e` is a valid entry.
    unsafe {
        let e = &*e;
        e.in_use && e.dbid == db && &e.tag[..e.tag_len] == tag
    }
}

/// Finds the entry of (this database, tag), claiming one on first use. Slow path.
fn find_or_claim(tag: &str) -> (usize, u64) {
    let h = header();
    let db = my_db();
    // SAFETY: `h` is the live header; capacity never changes after startup.
    let cap = unsafe { (*h).capacity };
    for _attempt in 0..3 {
        {
            // Identity fields change only under the table lock held exclusively: shared suffices.
            let _t = Held::table_shared();
            let found = (0..cap).find_map(|i| {
                let e = entry_ptr(i);
                // SAFETY: identity fields are read under the table lock (see the protocol).
                unsafe { entry_matches(e, db, tag.as_bytes()).then(|| (i, (*e).generation)) }
            });
            if let Some(found) = found {
                return found;
            }
        }
        // Not in shared memory yet: read the catalog with no LWLock held.
        let Some(cfg) = read_config(tag) else { unknown_tag(tag) };
        let claimed = claim(tag, &cfg).or_else(|| {
            // Full: entries of databases dropped since they were claimed can be reused.
            reclaim_dropped_databases().then(|| claim(tag, &cfg)).flatten()
        });
        let Some((idx, gen)) = claimed else {
            raise(
                Code::ERRCODE_CONFIGURATION_LIMIT_EXCEEDED,
                format!("the shared segment table is full: all {cap} entries are in use"),
                Some("Raise pg_idgen.max_segments (takes a server restart), or drop tags no longer used with segment_drop()."),
            )
        };
        // The row read may belong to a tag whose drop committed after it was read, and whose
        // release (at that commit) ran before the claim: the entry would point at a dropped
        // sequence for every backend. Waiting for a lock on the sequence waits for such a drop
        // to finish; if the sequence is gone, undo the claim and read the catalog again.
        if relation_exists_locked(cfg.seqoid, pg_sys::AccessShareLock) {
            return (idx, gen);
        }
        release_claim(idx, gen);
    }
    raise(
        Code::ERRCODE_OBJECT_IN_USE,
        format!("segment tag \"{tag}\" is being dropped and re-created concurrently"),
        Some("Retry the statement."),
    )
}

/// Frees the entries of databases that no longer exist; true if it freed any. Database
/// existence is checked in the syscache (the current catalog state, not the caller's snapshot).
fn reclaim_dropped_databases() -> bool {
    let h = header();
    // SAFETY: as above.
    let cap = unsafe { (*h).capacity };
    let mut in_table: Vec<pg_sys::Oid> = {
        let _t = Held::table_shared();
        (0..cap)
            .filter_map(|i| {
                let e = entry_ptr(i);
                // SAFETY: identity fields are read under the table lock.
                unsafe { (*e).in_use.then_some((*e).dbid) }
            })
            .collect()
    };
    in_table.sort_unstable_by_key(|o| u32::from(*o));
    in_table.dedup();
    // SAFETY: AcceptInvalidationMessages and a syscache probe are plain catalog access, done
    // with no LWLock held.
    let dead: Vec<pg_sys::Oid> = unsafe {
        pg_sys::AcceptInvalidationMessages();
        in_table
            .into_iter()
            .filter(|db| {
                !pg_sys::SearchSysCacheExists(
                    pg_sys::SysCacheIdentifier::DATABASEOID as i32,
                    pg_sys::Datum::from(*db),
                    pg_sys::Datum::from(0),
                    pg_sys::Datum::from(0),
                    pg_sys::Datum::from(0),
                )
            })
            .collect()
    };
    if dead.is_empty() {
        return false;
    }
    let _t = Held::table();
    for i in 0..cap {
        let _g = Held::entry(i);
        let e = entry_ptr(i);
        // SAFETY: identity fields are written with both the table and the entry lock held.
        unsafe {
            if (*e).in_use && dead.contains(&(*e).dbid) {
                (*e).in_use = false;
                (*h).next_gen += 1;
                (*e).generation = (*h).next_gen;
            }
        }
    }
    true
}

/// Undoes a claim of entry `idx` made with generation `gen`, unless it changed meanwhile.
fn release_claim(idx: usize, gen: u64) {
    let h = header();
    let _t = Held::table();
    let _g = Held::entry(idx);
    let e = entry_ptr(idx);
    // SAFETY: identity fields are written with both the table and the entry lock held.
    unsafe {
        if (*e).in_use && (*e).generation == gen {
            (*e).in_use = false;
            (*h).next_gen += 1;
            (*e).generation = (*h).next_gen;
        }
    }
}

/// Claims a free entry for (this database, tag), unless another backend claimed one meanwhile.
/// None when the table is full.
fn claim(tag: &str, cfg: &TagConfig) -> Option<(usize, u64)> {
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
        // SAFETY: the table lock is held exclusively and the entry lock too: the entry may be
        // rewritten whole (see the protocol); its condition variable lives outside it.
        unsafe {
            if (*e).in_use {
                continue;
            }
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
                    refilling: false,
                    ahead_failed: false,
                    issued: 0,
                    refills: 0,
                    sync_refills: 0,
                    discarded: 0,
                    last_refill_ms: 0,
                },
            );
            (&mut (*e).tag)[..tag.len()].copy_from_slice(tag.as_bytes());
            return Some((i, gen));
        }
    }
    None
}

/// Releases the entry of (db, tag) if it is in shared memory: its cached values are dropped
/// (gaps) and backends holding its index see the generation change.
fn release(db: pg_sys::Oid, tag: &str) {
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
                (*e).in_use = false;
                (*h).next_gen += 1;
                (*e).generation = (*h).next_gen;
            }
        }
    }
}

unsafe extern "C-unwind" {
    /// The C function itself, only ever called by `DirectFunctionCall1Coll` (which pgrx guards).
    #[link_name = "nextval_oid"]
    fn raw_nextval_oid(fcinfo: pg_sys::FunctionCallInfo) -> pg_sys::Datum;
}

/// The current WAL insert position as a flush target. When nothing has been inserted on the
/// current page yet, `GetXLogInsertRecPtr` points just past the page header, a position no
/// record ends at, and `XLogFlush` to it would fail ("xlog flush request … is not satisfied"):
/// use the page boundary instead, which is where the last record ended.
fn flushable(ptr: pg_sys::XLogRecPtr) -> pg_sys::XLogRecPtr {
    let maxalign = |n: usize| n.next_multiple_of(pg_sys::MAXIMUM_ALIGNOF as usize) as u64;
    let short_phd = maxalign(std::mem::size_of::<pg_sys::XLogPageHeaderData>()); // SizeOfXLogShortPHD
    let long_phd = maxalign(std::mem::size_of::<pg_sys::XLogLongPageHeaderData>()); // SizeOfXLogLongPHD
    let page_off = ptr % pg_sys::XLOG_BLCKSZ as u64;
    // SAFETY: wal_segment_size is set at startup and never changes afterwards.
    let seg_off = ptr % unsafe { pg_sys::wal_segment_size } as u64;
    if page_off == short_phd && seg_off != short_phd || seg_off == long_phd {
        ptr - page_off
    } else {
        ptr
    }
}

/// Makes everything inserted into WAL so far durable, and waits for synchronous standbys if any
/// are configured, as a commit does.
fn flush_wal_and_wait_for_sync_standbys() {
    // SAFETY: XLogFlush raises an ERROR on failure; SyncRepWaitForLSN must run with interrupts
    // held, as RecordTransactionCommit does (it asserts so on assert-enabled builds): a cancel
    // or termination during the wait is turned into a WARNING and the wait ends; interrupts
    // are serviced again at the next CHECK_FOR_INTERRUPTS after RESUME.
    unsafe {
        let upto = flushable(pg_sys::GetXLogInsertRecPtr());
        pg_sys::XLogFlush(upto);
        pg_sys::InterruptHoldoffCount += 1; // HOLD_INTERRUPTS()
        pg_sys::SyncRepWaitForLSN(upto, false);
        pg_sys::InterruptHoldoffCount -= 1; // RESUME_INTERRUPTS()
    }
}

/// Reserves `mult` chunks from the tag's sequence and makes the reservation durable. Runs with
/// no LWLock held. Returns the segment, or None if the chunks would overflow bigint.
fn reserve(seqoid: pg_sys::Oid, unit: i64, stride: i64, mult: i64) -> Option<Segment> {
    // SAFETY: a flag of the current transaction.
    if unsafe { pg_sys::XactReadOnly } {
        raise(
            Code::ERRCODE_READ_ONLY_SQL_TRANSACTION,
            "cannot reserve a new segment in a read-only transaction",
            Some("segment_next() reserves values durably when its segment runs out, like nextval(); call it in a read-write transaction."),
        );
    }
    let mut starts = Vec::with_capacity(mult as usize);
    {
        let _su = AsSuperuser::new();
        for _ in 0..mult {
            // SAFETY: nextval_oid is a V1 function taking a regclass; DirectFunctionCall1Coll
            // builds its call frame and is itself guarded by pgrx.
            let d = unsafe {
                pg_sys::DirectFunctionCall1Coll(
                    Some(raw_nextval_oid),
                    pg_sys::Oid::INVALID,
                    pg_sys::Datum::from(seqoid),
                )
            };
            starts.push(d.value() as i64);
        }
    }
    // Everything inserted so far: our nextval's record, or the earlier record (possibly another
    // backend's, still unflushed) that covers the values we got.
    flush_wal_and_wait_for_sync_standbys();
    Segment::from_chunks(&starts, unit, stride)
}

/// Runs `f` in an internal subtransaction, as a PL/pgSQL exception block does: an ERROR in `f`
/// rolls the subtransaction back (releasing the sequence's buffer lock, its relation and
/// whatever else it held) and is returned, so the caller decides whether to rethrow it.
fn in_subtransaction<T>(
    f: impl FnOnce() -> T + std::panic::UnwindSafe,
) -> Result<T, Box<pgrx::pg_sys::panic::CaughtError>> {
    // SAFETY: the standard internal-subtransaction protocol (see plpgsql's exec_stmt_block): save
    // the memory context and resource owner, begin, run, then release or roll back and restore.
    unsafe {
        let cxt = pg_sys::CurrentMemoryContext;
        let owner = pg_sys::CurrentResourceOwner;
        pg_sys::BeginInternalSubTransaction(std::ptr::null());
        pg_sys::MemoryContextSwitchTo(cxt);
        let result = pgrx::PgTryBuilder::new(move || Ok(f())).catch_others(|e| Err(Box::new(e))).execute();
        match result {
            Ok(_) => pg_sys::ReleaseCurrentSubTransaction(),
            Err(_) => {
                pg_sys::MemoryContextSwitchTo(cxt);
                pg_sys::RollbackAndReleaseCurrentSubTransaction();
            }
        }
        pg_sys::MemoryContextSwitchTo(cxt);
        pg_sys::CurrentResourceOwner = owner;
        result
    }
}

/// Refills entry `idx` (generation `gen`). `sync`: both buffers were empty and the caller has no
/// value; otherwise the caller already holds a value and a failed reservation must not cost it
/// that value (it is returned; the entry stops refilling ahead until a synchronous refill).
fn refill(idx: usize, gen: u64, sync: bool) {
    let (seqoid, unit, stride, mult) = {
        let _g = Held::entry(idx);
        let e = entry_ptr(idx);
        // SAFETY: mutable entry fields are read under the entry lock.
        unsafe {
            if !(*e).in_use || (*e).generation != gen {
                return;
            }
            ((*e).seqoid, (*e).unit, (*e).stride, (*e).mult)
        }
    };
    // SAFETY: a flag of the current transaction.
    if !sync && unsafe { pg_sys::XactReadOnly } {
        finish_refill(idx, gen, |e| e.refilling = false);
        return; // in a read-only transaction only a caller left with no value reserves (and fails)
    }
    let reserved = in_subtransaction(move || reserve(seqoid, unit, stride, mult));
    let seg = match reserved {
        Ok(seg) => seg,
        Err(error) => {
            finish_refill(idx, gen, |e| {
                e.refilling = false;
                if !sync {
                    e.ahead_failed = true;
                }
            });
            let cancelled = matches!(&*error, pgrx::pg_sys::panic::CaughtError::PostgresError(r)
                if matches!(r.sql_error_code(), Code::ERRCODE_QUERY_CANCELED | Code::ERRCODE_ADMIN_SHUTDOWN));
            if sync || cancelled {
                error.rethrow();
            }
            return; // the caller's value stands; the next synchronous refill retries and reports
        }
    };
    let now = now_unix_ms();
    let mut overflow = false;
    finish_refill(idx, gen, |e| {
        e.refilling = false;
        let Some(seg) = seg else {
            overflow = true;
            e.ahead_failed = true;
            return;
        };
        match e.bufs.install(seg) {
            pg_idgen_core::segment::Installed::Discarded => e.discarded += 1,
            _ => {
                e.ahead_failed = false;
                e.refills += 1;
                if sync {
                    e.sync_refills += 1;
                }
                if e.last_refill_ms > 0 {
                    let lasted = now - e.last_refill_ms;
                    e.mult = next_multiple(e.mult, lasted, e.target_ms, e.min_m, e.max_m);
                }
                e.last_refill_ms = now;
            }
        }
    });
    if overflow && sync {
        overflow_oid(seqoid);
    }
}

/// Applies `f` to entry `idx` under its lock if it still has generation `gen` (a drop or set
/// meanwhile makes the reservation a gap), then wakes the backends waiting for this refill.
fn finish_refill(idx: usize, gen: u64, f: impl FnOnce(&mut Entry)) {
    {
        let _g = Held::entry(idx);
        let e = entry_ptr(idx);
        // SAFETY: the entry lock is held; `f` does arithmetic only (see the protocol).
        unsafe {
            if (*e).generation == gen {
                f(&mut *e);
            }
        }
    }
    // SAFETY: the condition variable of entry `idx` lives in shared memory for the server's life.
    unsafe { pg_sys::ConditionVariableBroadcast(cv_ptr(idx)) };
}

fn overflow_oid(seqoid: pg_sys::Oid) -> ! {
    raise(
        Code::ERRCODE_SEQUENCE_GENERATOR_LIMIT_EXCEEDED,
        format!("segment sequence {} has reached the largest bigint value", u32::from(seqoid)),
        None,
    )
}

/// Longest a backend that found both buffers empty waits for another backend's reservation in
/// flight before reserving by itself (that reservation may have died with its backend).
const WAIT_FOR_REFILL_MS: i64 = 100;

/// Unguarded C entry points for the hot path. pgrx routes every `pg_sys` call through a
/// `sigsetjmp` boundary (~15 ns each); these three cannot raise an ERROR in the way they are used
/// here (an uncontended or contended acquire of a lock we do not hold, its release, a flag read),
/// so they are called directly. Everything else, including every error, goes through pgrx.
mod raw {
    use pgrx::pg_sys;
    unsafe extern "C" {
        #[link_name = "LWLockAcquire"]
        pub fn lwlock_acquire(lock: *mut pg_sys::LWLock, mode: pg_sys::LWLockMode::Type) -> bool;
        #[link_name = "LWLockRelease"]
        pub fn lwlock_release(lock: *mut pg_sys::LWLock);
        #[link_name = "RecoveryInProgress"]
        pub fn recovery_in_progress() -> bool;
    }
}

/// The tags this backend used last (a few, so that a table with several segment DEFAULTs does not
/// miss on every call): tag bytes, entry index, the entry's generation then. Backends are
/// single-threaded and only `segment_next` touches it.
const CACHE_SLOTS: usize = 8;

#[derive(Clone, Copy)]
struct Cached {
    len: usize,
    tag: [u8; MAX_TAG_BYTES],
    idx: usize,
    gen: u64,
}

static mut CACHE: [Cached; CACHE_SLOTS] =
    [Cached { len: usize::MAX, tag: [0; MAX_TAG_BYTES], idx: usize::MAX, gen: 0 }; CACHE_SLOTS];
static mut CACHE_NEXT: usize = 0;

#[inline]
#[allow(clippy::deref_addrof)] // `&raw` keeps clear of references to a `static mut`
fn cache_get(tag: &[u8]) -> Option<(usize, u64)> {
    // SAFETY: the backend is single-threaded and only segment_next uses the cache; no reference
    // to it outlives this function.
    let cache = unsafe { &*(&raw const CACHE) };
    cache.iter().find(|c| c.len == tag.len() && c.tag[..c.len] == *tag).map(|c| (c.idx, c.gen))
}

#[allow(clippy::deref_addrof)]
fn cache_put(tag: &[u8], idx: usize, gen: u64) {
    // SAFETY: as in `cache_get`.
    let cache = unsafe { &mut *(&raw mut CACHE) };
    let slot = match cache.iter().position(|c| c.len == tag.len() && c.tag[..c.len] == *tag) {
        Some(i) => i,
        None => unsafe {
            let i = CACHE_NEXT % CACHE_SLOTS;
            CACHE_NEXT = CACHE_NEXT.wrapping_add(1);
            i
        },
    };
    let c = &mut cache[slot];
    c.tag[..tag.len()].copy_from_slice(tag);
    c.len = tag.len();
    c.idx = idx;
    c.gen = gen;
}

/// The bytes of a text argument without copying; detoasts only when it must (a TOAST pointer
/// or compressed inline data: `VARATT_IS_EXTENDED` less the short-header case).
unsafe fn text_bytes<'a>(d: pg_sys::Datum) -> &'a [u8] {
    use pgrx::varlena::{varatt_is_1b_e, varatt_is_4b_c, varlena_to_byte_slice};
    // SAFETY: `d` is a non-NULL text datum (the function is STRICT); the detoasted copy, if
    // any, lives in the call's memory context, which outlives the returned slice's use.
    unsafe {
        let mut p = d.cast_mut_ptr::<pg_sys::varlena>();
        if varatt_is_1b_e(p) || varatt_is_4b_c(p) {
            p = pg_sys::pg_detoast_datum_packed(p);
        }
        varlena_to_byte_slice(p)
    }
}

#[unsafe(no_mangle)]
#[doc(hidden)]
pub extern "C" fn pg_finfo_pg_idgen_segment_next() -> &'static pg_sys::Pg_finfo_record {
    const V1: pg_sys::Pg_finfo_record = pg_sys::Pg_finfo_record { api_version: 1 };
    &V1
}

/// `segment_next(tag text) RETURNS bigint STRICT`: the next value of `tag`, unique and
/// increasing across all backends of the instance. A plain V1 function (declared in the
/// extension SQL below) so that the steady state is two atomic LWLock operations and a few
/// compares: no pgrx argument conversion, no UTF-8 validation, no catalog access.
#[unsafe(no_mangle)]
#[pg_guard]
pub unsafe extern "C-unwind" fn pg_idgen_segment_next(fcinfo: pg_sys::FunctionCallInfo) -> pg_sys::Datum {
    // SAFETY: `fcinfo` is PostgreSQL's call frame for a STRICT one-argument function: its
    // first argument is a non-NULL text datum.
    unsafe {
        let arg = (*fcinfo).args.as_slice(1)[0].value;
        pg_sys::Datum::from(next_value(text_bytes(arg)))
    }
}

/// Whether entry `idx` (generation `gen`) still has both buffers empty and a refill in flight.
fn refill_in_flight(idx: usize, gen: u64) -> bool {
    let _g = Held::entry(idx);
    let e = entry_ptr(idx);
    // SAFETY: mutable entry fields are read under the entry lock.
    unsafe {
        (*e).in_use
            && (*e).generation == gen
            && (*e).refilling
            && (*e).bufs.remaining() == 0
            && (*e).bufs.next.is_empty()
    }
}

fn tag_str(tag: &[u8]) -> &str {
    std::str::from_utf8(tag).unwrap_or_else(|_| {
        raise(Code::ERRCODE_CHARACTER_NOT_IN_REPERTOIRE, "segment tag is not valid UTF-8", None)
    })
}

#[inline]
fn next_value(tag: &[u8]) -> i64 {
    if unsafe { raw::recovery_in_progress() } {
        check_not_standby();
    }
    // SAFETY: HEADER is set once at startup.
    let h = unsafe { HEADER };
    if h.is_null() {
        crate::errors::not_preloaded();
    }
    let (mut idx, mut gen) = cache_get(tag).unwrap_or((usize::MAX, 0));
    let mut wait_until_ms: Option<i64> = None;
    loop {
        if idx == usize::MAX {
            let t = tag_str(tag);
            validate_tag(t);
            (idx, gen) = find_or_claim(t);
            cache_put(tag, idx, gen);
        }
        // (value, refill now, another backend's refill is in flight)
        // SAFETY: `idx` < capacity; the entry lock is taken before and released after every access to
        // the entry's mutable fields, and nothing between can raise an ERROR (plain arithmetic).
        let taken = unsafe {
            let lock = &raw mut (*(*h).locks.add(idx + 1)).lock;
            raw::lwlock_acquire(lock, pg_sys::LWLockMode::LW_EXCLUSIVE);
            let e = entry_ptr(idx);
            let r = if !(*e).in_use || (*e).generation != gen {
                None
            } else {
                match (*e).bufs.take() {
                    Take::Value { value, .. } => {
                        (*e).issued += 1;
                        let due = !(*e).refilling && !(*e).ahead_failed && (*e).bufs.refill_overdue();
                        if due {
                            (*e).refilling = true;
                        }
                        Some((Some(value), due))
                    }
                    Take::Empty if (*e).refilling && wait_until_ms.is_none_or(|t| monotonic_ms() < t) => {
                        Some((None, false))
                    }
                    Take::Empty => {
                        (*e).refilling = true;
                        Some((None, true))
                    }
                }
            };
            raw::lwlock_release(lock);
            r
        };
        match taken {
            None => idx = usize::MAX, // stale cache (dropped, re-created, set): look up again
            Some((Some(value), due)) => {
                if due {
                    refill(idx, gen, false);
                }
                return value;
            }
            Some((None, true)) => refill(idx, gen, true),
            Some((None, false)) => {
                // Both buffers empty, a reservation in flight: sleep until it ends (its backend
                // broadcasts the entry's condition variable), for at most WAIT_FOR_REFILL_MS in
                // all; interruptible, and visible in pg_stat_activity as an Extension wait.
                let until = *wait_until_ms.get_or_insert_with(|| monotonic_ms() + WAIT_FOR_REFILL_MS);
                let left = (until - monotonic_ms()).clamp(0, WAIT_FOR_REFILL_MS);
                // SAFETY: the entry's condition variable lives in shared memory for the server's
                // life; the sleep is cancelled right after (also by abort after an ERROR).
                unsafe {
                    pg_sys::ConditionVariablePrepareToSleep(cv_ptr(idx));
                    // Re-checked after preparing, so a broadcast that came meanwhile is not missed.
                    if refill_in_flight(idx, gen) {
                        pg_sys::ConditionVariableTimedSleep(
                            cv_ptr(idx),
                            left.max(1),
                            pg_sys::PG_WAIT_EXTENSION,
                        );
                    }
                    pg_sys::ConditionVariableCancelSleep();
                }
            }
        }
    }
}

fn require_superuser(what: &str) {
    if !unsafe { pg_sys::superuser() } {
        raise(
            Code::ERRCODE_INSUFFICIENT_PRIVILEGE,
            format!("permission denied to {what}"),
            Some("Segment tags are configured by superusers (EXECUTE on segment_create, segment_drop and segment_set is revoked from PUBLIC)."),
        );
    }
}

fn check_writable(what: &str) {
    if unsafe { pg_sys::RecoveryInProgress() } {
        raise(
            Code::ERRCODE_READ_ONLY_SQL_TRANSACTION,
            format!("cannot {what} on a standby server"),
            Some("Run it on the primary."),
        );
    }
}

fn bad(msg: impl Into<String>, hint: Option<&str>) -> ! {
    raise(Code::ERRCODE_INVALID_PARAMETER_VALUE, msg, hint)
}

/// Creates a segment tag backed by its own sequence (superuser only).
#[pg_extern(volatile, parallel_unsafe)]
#[allow(clippy::too_many_arguments)]
fn segment_create(
    tag: Option<&str>,
    step: default!(Option<i32>, 1000),
    start: default!(Option<i64>, 1),
    nodes: default!(Option<i32>, 1),
    node_index: default!(Option<i32>, 0),
    min_step: default!(Option<i32>, "NULL"),
    max_step: default!(Option<i32>, "NULL"),
    target_interval: default!(Option<pgrx::datum::Interval>, "NULL"),
) {
    // NULL is only meaningful for the adaptive-step arguments (no adaptive step).
    let tag = required(tag, "tag");
    let step = required(step, "step");
    let start = required(start, "start");
    let nodes = required(nodes, "nodes");
    let node_index = required(node_index, "node_index");
    require_superuser("create a segment tag");
    check_writable("create a segment tag");
    validate_tag(tag);
    if step <= 0 || step > MAX_STEP {
        bad(format!("step must be between 1 and {MAX_STEP}, got {step}"), None);
    }
    if !(1..=MAX_NODES).contains(&nodes) {
        bad(format!("nodes must be between 1 and {MAX_NODES}, got {nodes}"), None);
    }
    if node_index < 0 || node_index >= nodes {
        bad(
            format!("node_index must be between 0 and nodes - 1 ({}), got {node_index}", nodes - 1),
            Some("Give each of the N instances sharing a tag its own node_index 0 .. N-1."),
        );
    }
    let adaptive = min_step.is_some() || max_step.is_some() || target_interval.is_some();
    let unit = min_step.unwrap_or(step);
    let maxs = max_step.unwrap_or(step);
    if adaptive {
        if target_interval.is_none() {
            bad(
                "an adaptive step needs target_interval",
                Some("Pass target_interval => '15 minutes' (Leaf's default) with min_step/max_step."),
            );
        }
        if unit <= 0 || maxs <= 0 || maxs > MAX_STEP {
            bad(format!("min_step and max_step must be between 1 and {MAX_STEP}"), None);
        }
        if !(unit <= step && step <= maxs) {
            bad(format!("step must lie within [min_step, max_step] = [{unit}, {maxs}], got {step}"), None);
        }
        if step % unit != 0 || maxs % unit != 0 {
            bad(
                "step and max_step must be multiples of min_step",
                Some(
                    "min_step is the fixed stride unit that keeps nodes disjoint; steps are multiples of it.",
                ),
            );
        }
        if (maxs / unit) as i64 > MAX_MULTIPLE {
            bad(format!("max_step may be at most {MAX_MULTIPLE} times min_step"), None);
        }
    }
    let origin = start.checked_add(node_index as i64 * unit as i64);
    let stride = nodes as i64 * unit as i64;
    if origin.and_then(|o| o.checked_add(stride)).is_none() {
        raise(Code::ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE, "start is too close to the largest bigint", None);
    }
    let origin = origin.unwrap();
    let schema = extension_schema();
    let _su = AsSuperuser::new();
    if let Some(interval) = target_interval {
        let ms: Option<f64> = Spi::get_one_with_args(
            "SELECT pg_catalog.date_part('epoch', $1) OPERATOR(pg_catalog.*) 1000",
            &[interval.into()],
        )
        .unwrap_or_else(|e| spi_failed("read target_interval", e));
        if !ms.is_some_and(|ms| (1.0..=i64::MAX as f64).contains(&ms)) {
            bad("target_interval must be positive", None);
        }
    }
    let exists: Option<bool> = Spi::get_one_with_args(
        &format!(
            "SELECT EXISTS (SELECT 1 FROM {schema}.pg_idgen_segments WHERE tag OPERATOR(pg_catalog.=) $1)"
        ),
        &[tag.into()],
    )
    .unwrap_or_else(|e| spi_failed("look the tag up", e));
    if exists == Some(true) {
        raise(
            Code::ERRCODE_DUPLICATE_OBJECT,
            format!("segment tag \"{tag}\" already exists"),
            Some("Use another tag, or segment_drop() it first (its values may then be handed out again)."),
        );
    }
    // The sequence's name is generated, never derived from the tag: the first free
    // pg_idgen_seg_<n> from the number of tags on (a few tries at most: n only collides with
    // names of dropped tags' successors).
    let count: i64 = Spi::get_one(&format!("SELECT pg_catalog.count(*) FROM {schema}.pg_idgen_segments"))
        .unwrap_or_else(|e| spi_failed("count the tags", e))
        .unwrap_or(0);
    let mut seqname = None;
    for n in count + 1..=count + 1000 {
        let name = format!("{schema}.pg_idgen_seg_{n}");
        let taken: Option<bool> =
            Spi::get_one_with_args("SELECT pg_catalog.to_regclass($1) IS NOT NULL", &[name.as_str().into()])
                .unwrap_or_else(|e| spi_failed("name the backing sequence", e));
        if taken == Some(false) {
            seqname = Some(name);
            break;
        }
    }
    let Some(seqname) = seqname else {
        raise(
            Code::ERRCODE_DUPLICATE_OBJECT,
            "no free name for the backing sequence of a segment tag",
            Some("Relations named pg_idgen_seg_<n> in the extension's schema that are not backing sequences of tags should be renamed."),
        )
    };
    let ddl = format!(
        "CREATE SEQUENCE {seqname} AS bigint INCREMENT BY {stride} MINVALUE {origin} START WITH {origin} CACHE 1 NO CYCLE"
    );
    Spi::run(&ddl).unwrap_or_else(|e| {
        raise(Code::ERRCODE_INTERNAL_ERROR, format!("could not create the backing sequence: {e}"), None)
    });
    Spi::run_with_args(
        &format!(
            "INSERT INTO {schema}.pg_idgen_segments (tag, seq, step, unit, start, nodes, node_index, min_step, max_step, target_interval) \
             VALUES ($1, $2::pg_catalog.regclass, $3, $4, $5, $6, $7, $8, $9, $10)"
        ),
        &[
            tag.into(),
            seqname.as_str().into(),
            step.into(),
            unit.into(),
            start.into(),
            nodes.into(),
            node_index.into(),
            min_step.filter(|_| adaptive).or(adaptive.then_some(unit)).into(),
            max_step.filter(|_| adaptive).or(adaptive.then_some(maxs)).into(),
            target_interval.into(),
        ],
    )
    .unwrap_or_else(|e| raise(Code::ERRCODE_INTERNAL_ERROR, format!("could not record the segment tag: {e}"), None));
    // A tag of the same name dropped earlier may still sit in shared memory; and if this
    // transaction aborts, an entry claimed for the new tag meanwhile must go too.
    let db = my_db();
    release(db, tag);
    let t = tag.to_string();
    pgrx::register_xact_callback(pgrx::PgXactCallbackEvent::Abort, move || release(db, &t));
}

/// Drops a segment tag and its sequence (superuser only).
#[pg_extern(volatile, parallel_unsafe, strict)]
fn segment_drop(tag: &str) {
    require_superuser("drop a segment tag");
    check_writable("drop a segment tag");
    let schema = extension_schema();
    let _su = AsSuperuser::new();
    let seq: Option<pg_sys::Oid> = Spi::connect_mut(|c| {
        let t = c.update(
            &format!(
                "DELETE FROM {schema}.pg_idgen_segments WHERE tag OPERATOR(pg_catalog.=) $1 RETURNING seq::pg_catalog.oid"
            ),
            None,
            &[tag.into()],
        )?;
        if t.is_empty() {
            return Ok(None);
        }
        t.first().get::<pg_sys::Oid>(1)
    })
    .unwrap_or_else(|e| spi_failed("delete the tag", e));
    let Some(seq) = seq else { unknown_tag(tag) };
    // The name is built in Rust from the catalog, by OID.
    if let Some(name) = qualified_relation_name(seq) {
        Spi::run(&format!("DROP SEQUENCE {name}"))
            .unwrap_or_else(|e| spi_failed("drop the backing sequence", e));
    }
    let db = my_db();
    release(db, tag);
    // A backend may have re-read the row before this transaction commits: release again then.
    let t = tag.to_string();
    pgrx::register_xact_callback(pgrx::PgXactCallbackEvent::Commit, move || release(db, &t));
}

/// What a tag's backing sequence has reserved, read under the sequence's own lock as nextval
/// sees it: the largest value that may have been handed out, or None if nothing ever was.
/// `last_value` with `is_called` is the whole truth: after `setval(.., false)` (what
/// segment_set leaves) `pg_sequence_last_value()` is NULL although values below were issued.
fn persisted_hwm(seqoid: pg_sys::Oid, unit: i64, origin: i64) -> Option<i64> {
    let name = qualified_relation_name(seqoid).unwrap_or_else(|| {
        raise(
            Code::ERRCODE_UNDEFINED_TABLE,
            format!("the backing sequence (OID {}) of a segment tag does not exist", u32::from(seqoid)),
            Some("Drop the tag with segment_drop() and create it again."),
        )
    });
    let (last, called) = Spi::connect(|c| {
        let t = c.select(&format!("SELECT last_value, is_called FROM {name}"), Some(1), &[])?;
        let r = t.first();
        Ok::<_, pgrx::spi::Error>((r.get::<i64>(1)?, r.get::<bool>(2)?))
    })
    .unwrap_or_else(|e| spi_failed("read the backing sequence", e));
    let (Some(last), Some(called)) = (last, called) else {
        raise(Code::ERRCODE_DATA_CORRUPTED, format!("sequence {name} has no state"), None)
    };
    if called {
        Some(last.saturating_add(unit - 1))
    } else if last > origin {
        Some(last - 1) // moved by segment_set: anything below may have been handed out
    } else {
        None // never used
    }
}

/// Moves a tag forward: values handed out from now on are >= `next` (superuser only). Values
/// already reserved and cached are discarded (a gap). Like setval, not undone by ROLLBACK.
#[pg_extern(volatile, parallel_unsafe, strict)]
fn segment_set(tag: &str, next: i64) -> i64 {
    require_superuser("set a segment tag");
    check_writable("set a segment tag");
    let schema = extension_schema();
    let _su = AsSuperuser::new();
    let row = Spi::connect(|c| {
        let t = c.select(
            &format!(
                "SELECT seq::pg_catalog.oid, unit::pg_catalog.int8, \
                        nodes::pg_catalog.int8 OPERATOR(pg_catalog.*) unit, \
                        start OPERATOR(pg_catalog.+) (node_index::pg_catalog.int8 OPERATOR(pg_catalog.*) unit) \
                 FROM {schema}.pg_idgen_segments WHERE tag OPERATOR(pg_catalog.=) $1"
            ),
            Some(1),
            &[tag.into()],
        )?;
        if t.is_empty() {
            return Ok::<_, pgrx::spi::Error>(None);
        }
        let r = t.first();
        Ok(Some((r.get::<pg_sys::Oid>(1)?, r.get::<i64>(2)?, r.get::<i64>(3)?, r.get::<i64>(4)?)))
    })
    .unwrap_or_else(|e| spi_failed("read the tag", e));
    let Some((Some(seqoid), Some(unit), Some(stride), Some(origin))) = row else { unknown_tag(tag) };
    // Block concurrent reservations (nextval takes RowExclusiveLock) until this transaction
    // ends, then read what has been reserved: nothing can be reserved between the read and
    // the setval below.
    // SAFETY: locks a relation by OID; released at transaction end.
    unsafe { pg_sys::LockRelationOid(seqoid, pg_sys::ShareRowExclusiveLock as i32) };
    if let Some(h) = persisted_hwm(seqoid, unit, origin) {
        if next <= h {
            raise_full(
                Code::ERRCODE_INVALID_PARAMETER_VALUE,
                format!("segment_set can only move tag \"{tag}\" forward: values up to {h} may have been handed out"),
                Some(format!("Requested next value: {next}.")),
                Some("Pass a value above the persisted high-water mark shown by segment_status."),
            );
        }
    }
    let Some(chunk) = chunk_at_or_above(origin, stride, next).filter(|c| c.checked_add(unit).is_some())
    else {
        raise(
            Code::ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE,
            format!("{next} is too close to the largest bigint"),
            None,
        )
    };
    Spi::run_with_args(
        "SELECT pg_catalog.setval($1::pg_catalog.oid::pg_catalog.regclass, $2, false)",
        &[seqoid.into(), chunk.into()],
    )
    .unwrap_or_else(|e| spi_failed("move the backing sequence", e));
    flush_wal_and_wait_for_sync_standbys();
    release(my_db(), tag);
    chunk
}

/// Shared-memory state of this database's tags (used by the segment_status view).
#[pg_extern(volatile, parallel_safe)]
#[allow(clippy::type_complexity)]
fn segment_status_shmem() -> TableIterator<
    'static,
    (
        name!(tag, String),
        name!(current_step, i64),
        name!(cursor, Option<i64>),
        name!(segment_end, Option<i64>),
        name!(next_start, Option<i64>),
        name!(next_end, Option<i64>),
        name!(values_issued, i64),
        name!(refills, i64),
        name!(sync_refills, i64),
        name!(discarded, i64),
        name!(last_refill, Option<TimestampWithTimeZone>),
    ),
> {
    let mut rows = Vec::new();
    // SAFETY: HEADER is set once at startup; each entry is copied under its own lock.
    if unsafe { !HEADER.is_null() } {
        let db = my_db();
        for i in 0..unsafe { (*HEADER).capacity } {
            let snap = {
                let _g = Held::entry(i);
                let e = entry_ptr(i);
                unsafe {
                    if !(*e).in_use || (*e).dbid != db {
                        continue;
                    }
                    std::ptr::read(e)
                }
            };
            let b = snap.bufs;
            let cur_end = (!b.cur.is_empty()).then(|| b.cur.last());
            let tag = String::from_utf8_lossy(&snap.tag[..snap.tag_len]).into_owned();
            rows.push((
                tag,
                snap.mult * snap.unit,
                b.cursor(),
                cur_end,
                (!b.next.is_empty()).then_some(b.next.first),
                (!b.next.is_empty()).then(|| b.next.last()),
                snap.issued,
                snap.refills,
                snap.sync_refills,
                snap.discarded,
                (snap.last_refill_ms > 0).then(|| ms_to_timestamptz(snap.last_refill_ms)),
            ));
        }
    }
    TableIterator::new(rows)
}

/// The persisted high-water mark of every tag of this database: the largest value that may
/// have been handed out (NULL before the first reservation). Readable by every role (through the
/// segment_status view): the sequences are read as the extension, with the search path pinned.
#[pg_extern(volatile, parallel_safe)]
fn segment_persisted() -> TableIterator<'static, (name!(tag, String), name!(persisted_hwm, Option<i64>))> {
    let schema = extension_schema();
    let _su = AsSuperuser::new();
    let tags = Spi::connect(|c| {
        let t = c.select(
            &format!(
                "SELECT tag, seq::pg_catalog.oid, unit::pg_catalog.int8, \
                        start OPERATOR(pg_catalog.+) (node_index::pg_catalog.int8 OPERATOR(pg_catalog.*) unit) \
                 FROM {schema}.pg_idgen_segments"
            ),
            None,
            &[],
        )?;
        let mut v = Vec::new();
        for r in t {
            v.push((r.get::<String>(1)?, r.get::<pg_sys::Oid>(2)?, r.get::<i64>(3)?, r.get::<i64>(4)?));
        }
        Ok::<_, pgrx::spi::Error>(v)
    })
    .unwrap_or_else(|e| spi_failed("read pg_idgen_segments", e));
    let rows: Vec<_> = tags
        .into_iter()
        .filter_map(|row| match row {
            (Some(tag), Some(seq), Some(unit), Some(origin)) => Some((tag, persisted_hwm(seq, unit, origin))),
            _ => None,
        })
        .collect();
    TableIterator::new(rows)
}

/// An SPI call failed: say which, with PostgreSQL's message (never another meaning).
fn spi_failed(what: &str, e: pgrx::spi::Error) -> ! {
    raise(Code::ERRCODE_INTERNAL_ERROR, format!("pg_idgen could not {what}: {e}"), None)
}

extension_sql!(
    r#"
CREATE FUNCTION segment_next(tag text) RETURNS bigint
    STRICT VOLATILE PARALLEL UNSAFE LANGUAGE c AS 'MODULE_PATHNAME', 'pg_idgen_segment_next';

CREATE TABLE pg_idgen_segments (
    tag             text PRIMARY KEY CHECK (octet_length(tag) BETWEEN 1 AND 63),
    seq             regclass NOT NULL,
    step            int NOT NULL CHECK (step > 0),
    unit            int NOT NULL CHECK (unit > 0),
    start           bigint NOT NULL,
    nodes           int NOT NULL DEFAULT 1 CHECK (nodes BETWEEN 1 AND 1024),
    node_index      int NOT NULL DEFAULT 0,
    min_step        int,
    max_step        int,
    target_interval interval,
    created         timestamptz NOT NULL DEFAULT now(),
    CHECK (node_index >= 0 AND node_index < nodes),
    CHECK (step <= 100000000 AND step % unit = 0),
    CHECK ((min_step IS NULL AND max_step IS NULL AND target_interval IS NULL AND unit = step)
        OR (min_step = unit AND max_step >= step AND max_step % unit = 0
            AND max_step / unit <= 1024 AND target_interval > interval '0'))
);
COMMENT ON TABLE pg_idgen_segments IS 'pg_idgen segment tags: one row per tag, each backed by its own sequence (seq)';
SELECT pg_catalog.pg_extension_config_dump('pg_idgen_segments', '');
REVOKE ALL ON pg_idgen_segments FROM PUBLIC;

CREATE VIEW segment_status AS
SELECT s.tag,
       coalesce(m.current_step, s.step::bigint) AS step,
       s.nodes, s.node_index,
       p.persisted_hwm,
       m.cursor, m.segment_end, m.next_start, m.next_end,
       coalesce(m.values_issued, 0) AS values_issued,
       coalesce(m.refills, 0) AS refills,
       coalesce(m.sync_refills, 0) AS sync_refills,
       coalesce(m.discarded, 0) AS discarded,
       m.last_refill
FROM pg_idgen_segments s
LEFT JOIN segment_persisted() p USING (tag)
LEFT JOIN segment_status_shmem() m USING (tag);
COMMENT ON VIEW segment_status IS 'one row per segment tag of this database: step, persisted high-water mark, cached cursor/end, next buffer, statistics since server start';
GRANT SELECT ON segment_status TO PUBLIC;

REVOKE ALL ON FUNCTION segment_create(text, int, bigint, int, int, int, int, interval) FROM PUBLIC;
REVOKE ALL ON FUNCTION segment_drop(text) FROM PUBLIC;
REVOKE ALL ON FUNCTION segment_set(text, bigint) FROM PUBLIC;
COMMENT ON FUNCTION segment_next(text) IS 'next value of a segment tag: unique and increasing instance-wide, never reissued';
"#,
    name = "segment_objects",
    requires = [segment_create, segment_drop, segment_set, segment_status_shmem, segment_persisted],
);
