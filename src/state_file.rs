//! The generator's durable state file, `$PGDATA/pg_idgen/snowflake.state` (format and checks in
//! `pg_idgen_core::state_file`): loaded when shared memory is created, written under the
//! generator lock (see the protocol in `shmem`) and at a clean postmaster shutdown.

use std::ffi::CString;
use std::io::Write;
use std::sync::atomic::Ordering;

use pg_idgen_core::generator::{state_before_tick, state_tick};
use pg_idgen_core::{Layout, StateFile};
use pgrx::pg_sys;
use pgrx::prelude::*;

use crate::errors::{raise, Code};
use crate::gucs;
use crate::shmem::{
    claim_slot_locked, persisted_layout, set_persisted_layout, tick_at_or_after, Shared, Slot, SHARED,
};

/// Directory under the data directory holding pg_idgen's files.
pub const STATE_DIR: &str = "pg_idgen";
const STATE_FILE: &str = "pg_idgen/snowflake.state";
const STATE_TMP: &str = "pg_idgen/snowflake.state.tmp";

fn data_dir() -> String {
    // SAFETY: DataDir is set before libraries are preloaded and never changes.
    unsafe { std::ffi::CStr::from_ptr(pg_sys::DataDir).to_string_lossy().into_owned() }
}

/// Fills freshly created shared memory from the state file (postmaster, before any backend).
pub(crate) unsafe fn load(sh: &Shared) {
    let layout = gucs::layout();
    let path = format!("{}/{STATE_FILE}", data_dir());
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            set_persisted_layout(sh, &layout.canonical());
            let msg = format!(
                "pg_idgen: no generator state file \"{path}\": snowflake ids start from the system clock"
            );
            crate::errors::log_with_hint(
                &msg,
                "This is expected on a new cluster. If this data directory issued ids before (pg_upgrade, a file-level copy or a restore that left out pg_idgen/), stop the server and copy pg_idgen/snowflake.state from the old data directory.",
            );
            write_state_file(sh, layout, Override::None, pgrx::PgLogLevel::ERROR);
            return;
        }
        // Refusing to start is the only safe answer: without the file, ids could repeat.
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
    set_persisted_layout(sh, &state.layout);
    if state.layout != layout.canonical() {
        sh.layout_mismatch.store(true, Ordering::Relaxed);
        pgrx::log!(
            "pg_idgen: state file was written with layout \"{}\", server runs \"{}\"; snowflake_next() is refused until snowflake_accept_layout()",
            state.layout,
            layout.canonical()
        );
    }
    // Worker ids whose reservation has passed need no slot: their ids are all in the past, so
    // the floor (the latest of those reservations) keeps any later id above them. Only worker
    // ids with a reservation still ahead of the clock get a slot back.
    let now = crate::clock::now_unix_ms();
    let mut floor = state.floor_ms;
    let mut kept = 0;
    for &(worker, until_ms) in &state.workers {
        let slot = (until_ms > now).then(|| claim_slot_locked(sh, worker)).flatten();
        match slot {
            Some(slot) => {
                let tick = tick_at_or_after(layout, until_ms);
                slot.ws.state.store(state_before_tick(tick, layout.sequence_bits), Ordering::Relaxed);
                slot.ws.reserved.store(tick, Ordering::Relaxed);
                kept += 1;
            }
            None => floor = floor.max(until_ms),
        }
    }
    sh.floor_ms.store(floor, Ordering::Relaxed);
    pgrx::log!(
        "pg_idgen: generator state loaded: {} worker id(s) with a reservation ahead, {} folded into the floor {}",
        kept,
        state.workers.len() - kept,
        pg_idgen_core::layout::format_unix_ms(floor as i128)
    );
}

/// A value the state file must carry that shared memory does not hold yet.
pub(crate) enum Override<'a> {
    None,
    Slot(&'a Slot, u64),
    Floor(i64),
}

/// Writes the state file: for each worker, the Unix ms below which ids may have been issued, and
/// the floor. At ERROR (or PANIC) level a failure aborts the caller; at LOG level (postmaster
/// exit) it is only logged. The file is written to a temporary name, fsync'd, and renamed with
/// `durable_rename` (which fsyncs the directory); a newly created `pg_idgen/` is fsync'd with
/// the data directory.
pub(crate) fn write_state_file(
    sh: &Shared,
    layout: &Layout,
    over: Override<'_>,
    elevel: pgrx::PgLogLevel,
) -> bool {
    let mut state = StateFile {
        layout: persisted_layout(sh),
        floor_ms: sh.floor_ms.load(Ordering::Acquire),
        workers: Vec::new(),
    };
    for slot in sh.slots.iter() {
        let w = slot.worker_id.load(Ordering::Acquire);
        if w < 0 {
            continue;
        }
        let tick = match over {
            Override::Slot(s, end) if std::ptr::eq(s, slot) => end,
            _ => slot.ws.reserved.load(Ordering::Acquire),
        };
        state
            .workers
            .push((w, layout.tick_to_unix_ms(tick).clamp(i64::MIN as i128, i64::MAX as i128) as i64));
    }
    if let Override::Floor(ms) = over {
        state.floor_ms = state.floor_ms.max(ms);
    }
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

/// At a clean postmaster shutdown no backend runs: record for each worker the tick just after
/// its last issued id, so a restart does not jump ahead by the reservation. Not after a crash
/// (`code != 0`, the crash-restart cycle): shared memory is then not trusted, as
/// pg_stat_statements refuses to dump it; the file already covers every id issued.
#[pg_guard]
unsafe extern "C-unwind" fn persist_at_exit(code: i32, _arg: pg_sys::Datum) {
    // SAFETY: runs in the postmaster (IsUnderPostmaster is false) with no backend left.
    unsafe {
        if code != 0 || pg_sys::IsUnderPostmaster || SHARED.is_null() {
            return;
        }
        let sh = &*SHARED;
        let layout = gucs::layout();
        let any = sh.slots.iter().any(|s| s.worker_id.load(Ordering::Acquire) >= 0);
        if !any || sh.layout_mismatch.load(Ordering::Relaxed) {
            return; // nothing to record, or keep the file as the operator must see it
        }
        for slot in sh.slots.iter().filter(|s| s.worker_id.load(Ordering::Acquire) >= 0) {
            let last = state_tick(slot.ws.state.load(Ordering::Acquire), layout.sequence_bits);
            let reserved = slot.ws.reserved.load(Ordering::Acquire);
            slot.ws.reserved.store((last + 1).min(reserved), Ordering::Release);
        }
        write_state_file(sh, layout, Override::None, pgrx::PgLogLevel::LOG);
        SHARED = std::ptr::null_mut();
    }
}

/// Registers the clean-shutdown write (`persist_at_exit`) in the postmaster.
pub(crate) fn register_exit_write() {
    // SAFETY: called once in the postmaster when shared memory is created.
    unsafe { pg_sys::on_shmem_exit(Some(persist_at_exit), pg_sys::Datum::from(0)) };
}
