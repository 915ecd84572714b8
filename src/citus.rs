//! Citus: whether it is loaded on this server, and whether it propagates DDL in this session.
//! (Kept apart from `gucs` and `errors`, which both ask it, so that neither depends on the other
//! for it.)

use std::ffi::CStr;

use pgrx::pg_sys;

/// A setting's current value as text, None when no such setting (or placeholder) exists.
fn setting(name: &CStr) -> Option<String> {
    // SAFETY: GetConfigOption returns NULL or a string owned by guc.c, copied at once.
    let raw = unsafe { pg_sys::GetConfigOption(name.as_ptr(), true, false) };
    if raw.is_null() {
        return None;
    }
    // SAFETY: a non-NULL NUL-terminated string of guc.c, read before anything can change it.
    Some(unsafe { CStr::from_ptr(raw) }.to_string_lossy().into_owned())
}

/// Whether Citus is in shared_preload_libraries: there Citus propagates `ALTER DATABASE ... SET`
/// and `ALTER ROLE ... SET` to every node, so a worker id set that way would be every node's.
pub fn preloaded() -> bool {
    let Some(list) = setting(c"shared_preload_libraries") else { return false };
    list.split(',').any(|item| {
        let item = item.trim().trim_matches('"');
        let base = item.rsplit('/').next().unwrap_or(item);
        base == "citus" || base == "citus.so"
    })
}

/// Whether `citus.enable_ddl_propagation` is off in this session: Citus then sends no DDL of it
/// to other nodes. Citus turns it off itself before the commands it replays on a node it adds or
/// activates (the `ALTER ROLE ALL [IN DATABASE ...] SET` and `ALTER ROLE ... SET` copies of the
/// coordinator's stored settings), and before every DDL it forwards to a node. Unknown (Citus
/// not loaded into this backend yet) counts as on, its default.
pub fn ddl_propagation_off() -> bool {
    setting(c"citus.enable_ddl_propagation").is_some_and(|v| {
        matches!(v.trim().to_ascii_lowercase().as_str(), "off" | "false" | "no" | "0" | "f" | "n")
    })
}
