//! pg_idgen: distributed, time-ordered 64-bit keys for PostgreSQL.
//!
//! * [`gucs`] — the `pg_idgen.*` settings and their validation;
//! * [`shmem`] — shared generator state, its locking protocol and its durable state file;
//! * [`snowflake`] — `snowflake_next()` and statistics, on top of `pg_idgen_core`'s clock policy;
//! * [`segment`] — segment sequences (`segment_next()` & co): shared table, durable reservations;
//! * [`layouts`] — decoding and composing ids (`uid_decode`, `snowflake_at`, `uid_compose`);
//! * [`worker`] — the worker id: setting, catalog table, clone safety;
//! * [`wal`] — the custom WAL resource manager that carries reservations to standbys;
//! * [`mask`] — opaque public ids: `uid_mask`/`uid_unmask` (FF1), mask keys, text codes;
//! * [`errors`] — SQLSTATEs, messages and hints.
//!
//! The pure logic (bit layouts, the clock policy) lives in the `pg_idgen_core` crate.

use pgrx::prelude::*;

mod errors;
mod gucs;
mod layouts;
mod mask;
mod segment;
mod shmem;
mod snowflake;
mod wal;
mod worker;

#[cfg(any(test, feature = "pg_test"))]
mod tests;

::pgrx::pg_module_magic!(name, version);

#[pg_guard]
pub extern "C-unwind" fn _PG_init() {
    // Shared memory can only be requested while the postmaster preloads the library. Loaded
    // later, the decoding functions still work and the generators raise 55000 with a hint.
    let preloading = unsafe { pg_sys::process_shared_preload_libraries_in_progress };
    gucs::init(preloading);
    layouts::init();
    mask::init();
    if preloading {
        shmem::init();
        segment::init();
        wal::init();
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
