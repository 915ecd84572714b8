//! WAL logging of the snowflake time reservation: a custom WAL resource manager.
//!
//! Each extension of a worker's durable reservation (see `shmem`) is also written to WAL as a
//! small record `(worker id, reserved until (Unix ms), the primary's pg_idgen.max_drift_ms)` and
//! flushed (and confirmed by synchronous standbys) before any id of it is issued. Redo — crash
//! recovery, and continuously on a streaming standby — raises the worker's reservation in shared
//! memory and in the state file. So a standby promoted after the primary issued ids up to time T
//! starts above T even if its clock is behind, and crash recovery never brings a reservation
//! back. A standby that lagged has not replayed the last reservations: at the end of recovery
//! (`cleanup`) every generator is raised above the largest lead the old primary may have had
//! (`shmem::apply_recovery_floor`), which uses the largest max_drift_ms the records carried.
//! Records of 0.3.0 (without max_drift_ms, 16 bytes) are still replayed.
//!
//! Custom resource managers exist since PostgreSQL 15. The consequence for operators: WAL
//! holding these records can only be replayed with pg_idgen in shared_preload_libraries —
//! remove it from there only after a clean shutdown (whose checkpoint makes the records moot).

use std::ffi::c_char;

use pgrx::pg_sys;
use pgrx::prelude::*;

use crate::shmem;

/// pg_idgen's resource manager id, in the custom range 128–255 (RM_EXPERIMENTAL_ID is 128);
/// to be registered on https://wiki.postgresql.org/wiki/CustomWALResourceManagers before a
/// public release.
pub const RMGR_ID: u8 = 173;
/// Record type (the high nibble of xl_info belongs to the resource manager).
const XLOG_PG_IDGEN_RESERVE: u8 = 0x10;

#[repr(C)]
#[derive(Clone, Copy, Debug)]
struct ReserveRecord {
    worker_id: i64,
    until_unix_ms: i64,
    /// The writer's pg_idgen.max_drift_ms: how far ahead of its clock its ids may lie.
    max_drift_ms: i64,
}

/// Size of a record written by 0.3.0: no max_drift_ms.
const RECORD_V1_LEN: usize = 16;

static mut RMGR: pg_sys::RmgrData = pg_sys::RmgrData {
    rm_name: c"pg_idgen".as_ptr(),
    rm_redo: Some(redo),
    rm_desc: Some(desc),
    rm_identify: Some(identify),
    rm_startup: None,
    rm_cleanup: Some(cleanup),
    rm_mask: None,
    rm_decode: None,
};

/// Registers the resource manager; only possible while the postmaster preloads the library.
pub fn init() {
    // SAFETY: called from _PG_init while preloading; RMGR is a static that lives forever.
    unsafe { pg_sys::RegisterCustomRmgr(RMGR_ID, &raw mut RMGR) };
}

/// Writes and flushes a reservation record: when this returns, the reservation survives a
/// crash and reaches every standby that receives this WAL. Returns the end of the record, for
/// the wait for synchronous standbys (`syncrep`).
pub fn log_reservation(worker_id: i64, until_unix_ms: i64) -> pg_sys::XLogRecPtr {
    let mut rec = ReserveRecord { worker_id, until_unix_ms, max_drift_ms: crate::gucs::max_drift_ms() };
    // SAFETY: the standard XLogBeginInsert/XLogRegisterData/XLogInsert sequence; `rec` outlives
    // XLogInsert, which copies it. XLogFlush raises an ERROR on failure.
    unsafe {
        pg_sys::XLogBeginInsert();
        // The signature differs by major: (char *, int32) on 15, (char *, uint32) on 16 and 17,
        // (const void *, uint32) on 18; the casts are inferred from pg_sys's binding.
        pg_sys::XLogRegisterData((&raw mut rec).cast(), std::mem::size_of::<ReserveRecord>() as _);
        let lsn = pg_sys::XLogInsert(RMGR_ID, XLOG_PG_IDGEN_RESERVE);
        pg_sys::XLogFlush(lsn);
        lsn
    }
}

unsafe fn record_of(reader: *mut pg_sys::XLogReaderState) -> Option<(u8, ReserveRecord)> {
    // SAFETY: `reader` is the decoding state PostgreSQL passes to redo/desc; its main data is
    // read unaligned after checking its length.
    unsafe {
        let decoded = (*reader).record;
        if decoded.is_null() {
            return None;
        }
        let info = (*decoded).header.xl_info & !(pg_sys::XLR_INFO_MASK as u8);
        let len = (*decoded).main_data_len as usize;
        let data = (*decoded).main_data;
        let rec = if len == std::mem::size_of::<ReserveRecord>() {
            std::ptr::read_unaligned(data.cast::<ReserveRecord>())
        } else if len == RECORD_V1_LEN {
            let v1 = std::ptr::read_unaligned(data.cast::<[i64; 2]>());
            ReserveRecord { worker_id: v1[0], until_unix_ms: v1[1], max_drift_ms: -1 }
        } else {
            return None;
        };
        Some((info, rec))
    }
}

#[pg_guard]
unsafe extern "C-unwind" fn redo(reader: *mut pg_sys::XLogReaderState) {
    match unsafe { record_of(reader) } {
        Some((XLOG_PG_IDGEN_RESERVE, rec)) => {
            shmem::replay_reservation(rec.worker_id, rec.until_unix_ms, rec.max_drift_ms)
        }
        // Like core redo routines: a record this code cannot apply stops recovery for good.
        other => crate::errors::raise_at(
            PgLogLevel::PANIC,
            crate::errors::Code::ERRCODE_DATA_CORRUPTED,
            format!("pg_idgen redo: unknown or malformed WAL record {other:?}"),
        ),
    }
}

/// End of redo (crash recovery, a promotion, the end of archive recovery), in the startup
/// process before the server accepts writes: raise every generator above the largest lead the
/// old primary may have had (`shmem::apply_recovery_floor`), which WAL it did not replay
/// (a lagging standby) cannot tell.
#[pg_guard]
unsafe extern "C-unwind" fn cleanup() {
    shmem::apply_recovery_floor();
}

#[pg_guard]
unsafe extern "C-unwind" fn desc(buf: pg_sys::StringInfo, reader: *mut pg_sys::XLogReaderState) {
    if let Some((_, rec)) = unsafe { record_of(reader) } {
        let text = std::ffi::CString::new(format!(
            "worker {} reserved until {}, max_drift_ms {}",
            rec.worker_id,
            pg_idgen_core::layout::format_unix_ms(rec.until_unix_ms as i128),
            rec.max_drift_ms
        ))
        .unwrap_or_default();
        // SAFETY: `buf` is the StringInfo PostgreSQL passed; the text is NUL-terminated.
        unsafe { pg_sys::appendStringInfoString(buf, text.as_ptr()) };
    }
}

#[pg_guard]
unsafe extern "C-unwind" fn identify(info: u8) -> *const c_char {
    if info & !(pg_sys::XLR_INFO_MASK as u8) == XLOG_PG_IDGEN_RESERVE {
        c"RESERVE".as_ptr()
    } else {
        std::ptr::null()
    }
}
