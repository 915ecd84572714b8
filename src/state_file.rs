//! The generator's durable state file, `$PGDATA/pg_idgen/snowflake.state`: reading and writing
//! it (its format and checks are `pg_idgen_core::state_file`). What goes into it and when is the
//! business of `shmem`, which calls these under the generator lock or in the postmaster.

use std::ffi::CString;
use std::io::Write;

use pg_idgen_core::StateFile;
use pgrx::pg_sys;

use crate::errors::{raise, Code};

/// Directory under the data directory holding pg_idgen's files.
pub const STATE_DIR: &str = "pg_idgen";
const STATE_FILE: &str = "pg_idgen/snowflake.state";
const STATE_TMP: &str = "pg_idgen/snowflake.state.tmp";

fn data_dir() -> String {
    // SAFETY: DataDir is set before libraries are preloaded and never changes.
    unsafe { std::ffi::CStr::from_ptr(pg_sys::DataDir).to_string_lossy().into_owned() }
}

/// Reads and checks the state file. None when there is none (logged with a hint: expected on a
/// new cluster, not after a copy that left `pg_idgen/` out); raises when it cannot be read or is
/// corrupt: starting without it could issue ids twice.
pub fn read() -> Option<StateFile> {
    let path = format!("{}/{STATE_FILE}", data_dir());
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            crate::errors::log_with_hint(
                &format!("pg_idgen: no generator state file \"{path}\": snowflake ids start from the system clock"),
                "This is expected on a new cluster. If this data directory issued ids before (pg_upgrade, a file-level copy or a restore that left out pg_idgen/), stop the server and copy pg_idgen/snowflake.state from the old data directory.",
            );
            return None;
        }
        Err(e) => {
            raise(Code::ERRCODE_IO_ERROR, format!("could not read pg_idgen state file \"{path}\": {e}"), None)
        }
    };
    let state = StateFile::parse(&text).unwrap_or_else(|e| {
        raise(
            Code::ERRCODE_DATA_CORRUPTED,
            format!("pg_idgen state file \"{path}\" is corrupt: {e}"),
            Some("Restore it from a backup. Deleting it lets ids restart from the current clock, which is only safe if the clock is later than every id issued."),
        )
    });
    Some(state)
}

/// Writes `state` durably: to a temporary name, fsync'd, renamed with `durable_rename` (which
/// fsyncs the directory); a newly created `pg_idgen/` is fsync'd with the data directory. At
/// ERROR (or PANIC) level a failure raises; at LOG level (postmaster exit) it is only logged.
pub fn write(state: &StateFile, elevel: pgrx::PgLogLevel) -> bool {
    let dir = format!("{}/{STATE_DIR}", data_dir());
    let tmp = format!("{}/{STATE_TMP}", data_dir());
    let path = format!("{}/{STATE_FILE}", data_dir());
    let created = !std::path::Path::new(&dir).is_dir();
    let result = std::fs::create_dir_all(&dir).and_then(|_| {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(state.render().as_bytes())?;
        f.sync_all()
    });
    if let Err(e) = result {
        let msg = format!("could not write pg_idgen state file \"{tmp}\": {e}");
        if elevel == pgrx::PgLogLevel::LOG {
            pgrx::log!("{msg}");
            return false;
        }
        crate::errors::raise_at(elevel, Code::ERRCODE_IO_ERROR, msg);
    }
    let (ctmp, cpath, cdir, cdata) = (cstring(tmp), cstring(path), cstring(dir), cstring(data_dir()));
    // SAFETY: NUL-terminated paths; fsync_fname and durable_rename report failures themselves
    // (fsync_fname at data_sync_elevel, as PostgreSQL does for its own files).
    unsafe {
        if created {
            pg_sys::fsync_fname(cdir.as_ptr(), true);
            pg_sys::fsync_fname(cdata.as_ptr(), true);
        }
        // durable_rename fsyncs the file and its directory: the reservation survives a crash.
        pg_sys::durable_rename(ctmp.as_ptr(), cpath.as_ptr(), elevel as i32) == 0
    }
}

fn cstring(s: String) -> CString {
    CString::new(s).unwrap_or_default()
}
