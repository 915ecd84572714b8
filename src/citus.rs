//! Citus: whether it is loaded on this server. (Kept apart from `gucs` and `errors`, which both
//! ask it, so that neither depends on the other for it.)

use std::ffi::CStr;

use pgrx::pg_sys;

/// Whether Citus is in shared_preload_libraries: there Citus propagates `ALTER DATABASE ... SET`
/// and `ALTER ROLE ... SET` to every node, so a worker id set that way would be every node's.
pub fn preloaded() -> bool {
    // SAFETY: GetConfigOption returns NULL or a string owned by guc.c, copied at once.
    let raw = unsafe { pg_sys::GetConfigOption(c"shared_preload_libraries".as_ptr(), true, false) };
    if raw.is_null() {
        return false;
    }
    // SAFETY: a non-NULL NUL-terminated string of guc.c, read before anything can change it.
    let list = unsafe { CStr::from_ptr(raw) }.to_string_lossy().into_owned();
    list.split(',').any(|item| {
        let item = item.trim().trim_matches('"');
        let base = item.rsplit('/').next().unwrap_or(item);
        base == "citus" || base == "citus.so"
    })
}
