//! WAL logging of the snowflake time reservation: a custom WAL resource manager.
//!
//! Each extension of a worker's durable reservation (see `shmem`) is also written to WAL as a
//! small record `(worker id, reserved until, Unix ms)` and flushed before any id of it is issued.
//! Redo — crash recovery, and continuously on a streaming standby — raises the worker's
//! reservation in shared memory and in the state file. So a standby promoted after the primary
//! issued ids up to time T starts above T even if its clock is behind, and crash recovery never
//! brings a reservation back.
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
}

static mut RMGR: pg_sys::RmgrData = pg_sys::RmgrData {
    rm_name: c"pg_idgen".as_ptr(),
    rm_redo: Some(redo),
    rm_desc: Some(desc),
    rm_identify: Some(identify),
    rm_startup: None,
    rm_cleanup: None,
    rm_mask: None,
    rm_decode: None,
};

/// Registers the resource manager; only possible while the postmaster preloads the library.
pub fn init() {
    // SAFETY: called from _PG_init while preloading; RMGR is a static that lives forever.
    unsafe { pg_sys::RegisterCustomRmgr(RMGR_ID, &raw mut RMGR) };
}

/// Writes and flushes a reservation record: when this returns, the reservation survives a
/// crash and reaches every standby that receives this WAL.
pub fn log_reservation(worker_id: i64, until_unix_ms: i64) {
    let mut rec = ReserveRecord { worker_id, until_unix_ms };
    // SAFETY: the standard XLogBeginInsert/XLogRegisterData/XLogInsert sequence; `rec` outlives
    // XLogInsert, which copies it. XLogFlush raises an ERROR on failure.
    unsafe {
        pg_sys::XLogBeginInsert();
        // The signature differs by major: (char *, int32) on 15, (char *, uint32) on 16 and 17,
        // (const void *, uint32) on 18; the casts are inferred from pg_sys's binding.
        pg_sys::XLogRegisterData((&raw mut rec).cast(), std::mem::size_of::<ReserveRecord>() as _);
        let lsn = pg_sys::XLogInsert(RMGR_ID, XLOG_PG_IDGEN_RESERVE);
        pg_sys::XLogFlush(lsn);
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
        if (*decoded).main_data_len as usize != std::mem::size_of::<ReserveRecord>() {
            return None;
        }
        let rec = std::ptr::read_unaligned((*decoded).main_data.cast::<ReserveRecord>());
        Some((info, rec))
    }
}

#[pg_guard]
unsafe extern "C-unwind" fn redo(reader: *mut pg_sys::XLogReaderState) {
    match unsafe { record_of(reader) } {
        Some((XLOG_PG_IDGEN_RESERVE, rec)) => shmem::replay_reservation(rec.worker_id, rec.until_unix_ms),
        // Like core redo routines: a record this code cannot apply stops recovery for good.
        other => crate::errors::raise_at(
            PgLogLevel::PANIC,
            crate::errors::Code::ERRCODE_DATA_CORRUPTED,
            format!("pg_idgen redo: unknown or malformed WAL record {other:?}"),
        ),
    }
}

#[pg_guard]
unsafe extern "C-unwind" fn desc(buf: pg_sys::StringInfo, reader: *mut pg_sys::XLogReaderState) {
    if let Some((_, rec)) = unsafe { record_of(reader) } {
        let text = std::ffi::CString::new(format!(
            "worker {} reserved until {}",
            rec.worker_id,
            pg_idgen_core::layout::format_unix_ms(rec.until_unix_ms as i128)
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
