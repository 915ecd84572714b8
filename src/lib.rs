//! pg_idgen: distributed, time-ordered 64-bit keys for PostgreSQL.
//!
//! The pure logic (bit layouts, the clock policy, segment arithmetic, the state file format)
//! lives in the `pg_idgen_core` crate; this crate is the server side. Module map, and who calls
//! whom (arrows point at what a module uses):
//!
//! ```text
//!   _PG_init ──> gucs, catalog::init, hooks, wal
//!   hooks ─────> shmem, segment            (the one shared-memory hook chain)
//!   snowflake ─> shmem ──> state_file      (generator state; its durable copy)
//!                shmem <─> wal             (reservations are WAL-logged; redo raises them)
//!                worker ─> catalog, lease  (the worker id: setting or table; the lease's state)
//!                lease                     (leased worker ids: lease::{shmem, worker, registry};
//!                                           the caller passes the configured worker id)
//!   decode ────> layouts ─> catalog        (uid_decode & co; custom layouts)
//!   segment/ ──> catalog, lock, clock, syncrep  (layers, one way down, drawn in segment/mod.rs:
//!                hot, admin, handover, status > refill > plain | slotted | leased (> owners)
//!                > chunk, slot_rows, claim, backing, config > durable, table, errors)
//!   keyed/ ────> segment (backing, durable), catalog, lock  (table, space, next, admin)
//!   everything > errors, clock, lock, gucs; fmgr (PG_FUNCTION_INFO_V1 of the plain C functions)
//!   The one cycle: shmem <─> wal (scripts/check-imports.py, in `make test-docs`, fails on any other).
//! ```
//!
//! * [`gucs`] — the `pg_idgen.*` settings and their validation;
//! * [`catalog`] — the extension's schema by OID, the pinned search path, running as the
//!   extension, the relcache callback and the catalog trigger;
//! * [`hooks`] — the shared-memory hook chain; [`lock`] — an LWLock guard; [`clock`] — clocks
//!   and time conversions; [`errors`] — SQLSTATEs, messages and hints;
//! * [`shmem`] — shared generator state and its locking protocol; [`state_file`] — its durable
//!   copy; [`wal`] — the custom WAL resource manager that carries reservations to standbys;
//! * [`snowflake`] — `snowflake_next()` and statistics; [`worker`] — the worker id;
//! * [`lease`] — worker id leases from a registry: the hot-path check (`lease`), its shared word
//!   (`lease::shmem`), the background worker (`lease::worker`) and its client (`lease::registry`);
//! * [`decode`] — `uid_decode`, `snowflake_at`, `uid_compose`, `snowflake_layout`;
//!   [`layouts`] — named and custom layouts;
//! * [`segment`] — segment sequences (`segment_next()` & co);
//! * [`keyed`] — keyed sequences (`keyed_next(space, key)` & co): a counter per bigint key;
//! * [`mask`] — opaque public ids: `uid_mask`/`uid_unmask` (FF1), mask keys, text codes;
//! * [`monitor`] — the monitor worker's warnings ahead of time, and the worker-slot count of the
//!   `pg_idgen_metrics` view;
//! * [`replication`] — what must not replicate: the `ENABLE REPLICA` trigger that keeps another
//!   node's rows out of pg_idgen's tables on a logical replication subscriber;
//! * [`sql`] — the hand-written SQL in `sql/`, in install-script order; [`tables`] — reading the
//!   extension's tables and sequences by OID, without SQL;
//! * [`compat`] — C symbols that released versions' SQL names (kept until nothing can use them);
//! * [`fmgr`] — `pg_function_info_v1!`, the version-1 marker of the plain C functions.

#![deny(ffi_unwind_calls)]

use pgrx::prelude::*;

mod catalog;
mod citus;
mod clock;
mod compat;
mod decode;
mod errors;
mod fmgr;
mod gucs;
mod hooks;
mod keyed;
mod layouts;
mod lease;
mod lock;
mod majors;
mod mask;
mod migrate;
mod monitor;
mod replication;
mod segment;
mod shmem;
mod shmem_struct;
mod snowflake;
mod sql;
mod state_file;
mod syncrep;
mod tables;
mod wal;
mod worker;

#[cfg(any(test, feature = "pg_test"))]
mod tests;

::pgrx::pg_module_magic!(name, version);

#[pg_guard]
pub extern "C-unwind" fn _PG_init() {
    // Shared memory can only be requested while the postmaster preloads the library. Loaded
    // later, the decoding functions still work and the generators raise 55000 with a hint.
    // SAFETY: a flag PostgreSQL sets while it loads shared_preload_libraries.
    let preloading = unsafe { pg_sys::process_shared_preload_libraries_in_progress };
    errors::init();
    gucs::init(preloading);
    catalog::init(&[layouts::invalidate, worker::invalidate, segment::invalidate, keyed::invalidate]);
    mask::init();
    if preloading {
        hooks::init();
        wal::init();
        lease::init();
        monitor::register();
    }
}

/// Required by `cargo pgrx test`.
#[cfg(test)]
pub mod pg_test {
    pub fn setup(_options: Vec<&str>) {}

    #[must_use]
    pub fn postgresql_conf_options() -> Vec<&'static str> {
        vec!["shared_preload_libraries = 'pg_idgen'", "pg_idgen.worker_id = 7"]
    }
}
