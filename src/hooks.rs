//! The one chain of shared-memory hooks. Each subsystem only sizes, creates and attaches its own
//! memory: the snowflake generator state (`shmem`), the segment table (`segment`) and the worker
//! id lease (`lease::shmem`).

use pgrx::pg_sys;
use pgrx::prelude::*;

/// `AddinShmemInitLock` is `&MainLWLockArray[21].lock` (lwlocknames.h, PostgreSQL 15–18); the
/// macro is not in pgrx's bindings, and pgrx's own shared-memory code uses the same index.
const ADDIN_SHMEM_INIT_LOCK: usize = 21;

static mut PREV_SHMEM_REQUEST_HOOK: pg_sys::shmem_request_hook_type = None;
static mut PREV_SHMEM_STARTUP_HOOK: pg_sys::shmem_startup_hook_type = None;

/// Installs the hooks; only while the postmaster preloads the library.
pub fn init() {
    // SAFETY: called once from _PG_init while the postmaster loads the library, before any
    // other process exists; hooks are chained as PostgreSQL documents.
    unsafe {
        PREV_SHMEM_REQUEST_HOOK = pg_sys::shmem_request_hook;
        pg_sys::shmem_request_hook = Some(shmem_request);
        PREV_SHMEM_STARTUP_HOOK = pg_sys::shmem_startup_hook;
        pg_sys::shmem_startup_hook = Some(shmem_startup);
    }
}

/// Calls a hook installed before ours. A C hook reports errors by `siglongjmp`, not by unwinding:
/// pgrx's FFI guard catches that jump and turns it into a Rust unwind from here, which is why
/// the `ffi_unwind_calls` lint (denied crate-wide) is allowed on this one call.
#[allow(ffi_unwind_calls)]
unsafe fn call_previous_hook(hook: unsafe extern "C-unwind" fn()) {
    // SAFETY: `hook` was read from PostgreSQL's hook variable in _PG_init and is a valid function.
    unsafe { pg_sys::ffi::pg_guard_ffi_boundary(|| hook()) }
}

#[pg_guard]
unsafe extern "C-unwind" fn shmem_request() {
    // SAFETY: runs in the postmaster during shared-memory sizing, as the request functions need.
    unsafe {
        if let Some(prev) = PREV_SHMEM_REQUEST_HOOK {
            call_previous_hook(prev);
        }
        crate::shmem::request_shmem();
        crate::segment::request_shmem();
        crate::keyed::request_shmem();
        crate::lease::shmem::request_shmem();
        crate::segment::owners::request_shmem();
    }
}

#[pg_guard]
unsafe extern "C-unwind" fn shmem_startup() {
    // SAFETY: runs in the postmaster (and in each backend on EXEC_BACKEND builds); structures are
    // created or attached under AddinShmemInitLock, as PostgreSQL requires.
    unsafe {
        if let Some(prev) = PREV_SHMEM_STARTUP_HOOK {
            call_previous_hook(prev);
        }
        let init_lock = &raw mut (*pg_sys::MainLWLockArray.add(ADDIN_SHMEM_INIT_LOCK)).lock;
        pg_sys::LWLockAcquire(init_lock, pg_sys::LWLockMode::LW_EXCLUSIVE);
        let created = crate::shmem::attach_shmem();
        crate::segment::attach_shmem();
        crate::keyed::attach_shmem();
        crate::lease::shmem::attach_shmem();
        crate::segment::owners::attach_shmem();
        pg_sys::LWLockRelease(init_lock);
        if created {
            // Freshly created (server start, or after a crash): fill it from disk, and write the
            // exact state back at a clean shutdown.
            crate::shmem::load_from_disk(crate::shmem::shared());
        }
    }
}
