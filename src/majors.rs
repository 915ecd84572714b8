//! The C calls whose types differ between PostgreSQL majors, written once for all of them (15-19),
//! so that the rest of the crate calls one function the same way on every major. What changed,
//! and in which major, is listed in docs/contributing.md, "What differs between PostgreSQL versions".

use pgrx::pg_sys;

/// A syscache's id as the syscache functions take it: an `int` up to 18, the enum
/// `SysCacheIdentifier` itself from 19 (pgrx binds both as an integer type of its own).
#[cfg(not(feature = "pg19"))]
pub(crate) fn syscache_id(cache: pg_sys::SysCacheIdentifier::Type) -> std::ffi::c_int {
    cache as std::ffi::c_int
}
#[cfg(feature = "pg19")]
pub(crate) fn syscache_id(cache: pg_sys::SysCacheIdentifier::Type) -> pg_sys::SysCacheIdentifier::Type {
    cache
}

/// Whether the syscache `cache` (keyed by one OID, as DATABASEOID or RELOID) has a row for `oid`.
///
/// # Safety
/// In a transaction, with no LWLock held (a cache miss reads the catalog).
pub(crate) unsafe fn syscache_exists(cache: pg_sys::SysCacheIdentifier::Type, oid: pg_sys::Oid) -> bool {
    // SAFETY: the caller is in a transaction and holds no LWLock; the unused keys are zero.
    unsafe {
        pg_sys::SearchSysCacheExists(
            syscache_id(cache),
            pg_sys::Datum::from(oid),
            pg_sys::Datum::from(0),
            pg_sys::Datum::from(0),
            pg_sys::Datum::from(0),
        )
    }
}

/// Locks a pinned shared buffer exclusively: `LockBuffer`'s mode is an `int` up to 18 and the enum
/// `BufferLockMode` from 19 (where `LockBuffer` became a static inline function, which pgrx wraps).
///
/// # Safety
/// `buf` is a valid buffer this backend has pinned and has not locked.
pub(crate) unsafe fn lock_buffer_exclusive(buf: pg_sys::Buffer) {
    // SAFETY: the caller's pin on `buf`; the mode is the exclusive content lock.
    unsafe {
        #[cfg(not(feature = "pg19"))]
        pg_sys::LockBuffer(buf, pg_sys::BUFFER_LOCK_EXCLUSIVE as std::ffi::c_int);
        #[cfg(feature = "pg19")]
        pg_sys::LockBuffer(buf, pg_sys::BUFFER_LOCK_EXCLUSIVE);
    }
}

/// The replication origin this session replays changes of (`InvalidRepOriginId`, 0, when none):
/// the global `replorigin_session_origin` up to 18, the `origin` of `replorigin_xact_state` from 19.
pub(crate) fn session_replication_origin() -> u16 {
    // SAFETY: a plain read of a backend-local global.
    unsafe {
        #[cfg(not(feature = "pg19"))]
        {
            pg_sys::replorigin_session_origin
        }
        #[cfg(feature = "pg19")]
        {
            pg_sys::replorigin_xact_state.origin
        }
    }
}
