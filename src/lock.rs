//! An RAII guard over any LWLock in shared memory (the generator lock, the segment table's locks).

use pgrx::pg_sys;

/// Holds an LWLock; released on drop, including while an ERROR unwinds. Used for the generator
/// lock here and for the segment table's locks.
pub struct LockGuard(*mut pg_sys::LWLock);

impl LockGuard {
    /// Waits for `lock` in `mode`.
    pub fn acquire(lock: *mut pg_sys::LWLock, mode: pg_sys::LWLockMode::Type) -> LockGuard {
        // SAFETY: `lock` points to an LWLock in shared memory; an ERROR while it is held releases it
        // as part of abort (LWLockReleaseAll), and Drop checks LWLockHeldByMe.
        unsafe { pg_sys::LWLockAcquire(lock, mode) };
        LockGuard(lock)
    }
    /// Takes `lock` exclusively if no other backend holds it; None otherwise.
    pub fn try_exclusive(lock: *mut pg_sys::LWLock) -> Option<LockGuard> {
        // SAFETY: as in `acquire`.
        unsafe { pg_sys::LWLockConditionalAcquire(lock, pg_sys::LWLockMode::LW_EXCLUSIVE) }
            .then_some(LockGuard(lock))
    }
}

impl Drop for LockGuard {
    fn drop(&mut self) {
        if std::thread::panicking() {
            return; // an ERROR is unwinding: (sub)transaction abort releases every LWLock
        }
        // After an ERROR, abort processing may already have released every LWLock.
        // SAFETY: releases only a lock this backend holds.
        unsafe {
            if pg_sys::LWLockHeldByMe(self.0) {
                pg_sys::LWLockRelease(self.0);
            }
        }
    }
}
