//! A fixed-size `#[repr(C)]` struct in shared memory guarded by the one LWLock of a named tranche
//! of its own: the generator state, the lease state, the keyed marks queue, the segment registry
//! owners. The shared-memory request hook asks for the struct's size and the tranche (`request`);
//! the startup hook, under AddinShmemInitLock, creates the struct the first time — zeroed, then
//! `init` sets the lock and whatever else zero is not a valid value for — or, in a backend started
//! later (EXEC_BACKEND) or after a crash restart's reinitialisation, attaches to it (`attach`).

use pgrx::pg_sys;
use std::ffi::CStr;

/// From the shared-memory request hook: room for one `T` and a tranche of one lock.
///
/// # Safety
/// Called from the shared-memory request hook of the postmaster.
pub unsafe fn request<T>(tranche: &'static CStr) {
    // SAFETY: the request hook is where both requests are allowed (the caller's contract); the
    // tranche name is static, as RequestNamedLWLockTranche keeps the pointer.
    unsafe {
        pg_sys::RequestAddinShmemSpace(std::mem::size_of::<T>());
        pg_sys::RequestNamedLWLockTranche(tranche.as_ptr(), 1);
    }
}

/// From the startup hook, with AddinShmemInitLock held: the struct named `name`, created zeroed
/// and handed to `init` with the tranche's lock the first time; true when it was created here.
///
/// # Safety
/// Called under AddinShmemInitLock from the startup hook, after `request::<T>(tranche)`; zeroed
/// memory must be a valid `T` once `init` has run.
pub unsafe fn attach<T>(
    name: &CStr,
    tranche: &CStr,
    init: impl FnOnce(*mut T, *mut pg_sys::LWLock),
) -> (*mut T, bool) {
    // Shared memory hands out blocks aligned to PostgreSQL's cache line (PG_CACHE_LINE_SIZE,
    // 128 bytes): a `T` that needs more (none does; the generator's slots ask for 128) would not
    // compile.
    const { assert!(std::mem::align_of::<T>() <= 128, "a shared-memory struct aligned beyond 128 bytes") };
    // SAFETY: ShmemInitStruct returns `size_of::<T>()` bytes of shared memory (or raises an
    // ERROR), aligned to 128 bytes (every allocation is CACHELINEALIGN'ed), which the assertion
    // above makes enough for `T`; `found` is false only for
    // the first caller, which AddinShmemInitLock makes the only one writing it; the tranche was
    // requested with one lock, the first of the array GetNamedLWLockTranche returns.
    unsafe {
        let mut found = false;
        let p = pg_sys::ShmemInitStruct(name.as_ptr(), std::mem::size_of::<T>(), &mut found).cast::<T>();
        if !found {
            std::ptr::write_bytes(p.cast::<u8>(), 0, std::mem::size_of::<T>());
            init(p, &raw mut (*pg_sys::GetNamedLWLockTranche(tranche.as_ptr())).lock);
        }
        (p, !found)
    }
}
