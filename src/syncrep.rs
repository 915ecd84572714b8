//! Waiting for synchronous standbys to confirm a reservation (segment and snowflake), as a
//! commit waits: the values of a reservation are only handed out once every synchronous
//! standby has it, so a failover to one of them never hands them out again.
//!
//! The wait ends as a commit's does (SyncRepWaitForLSN): when the standbys confirmed the WAL;
//! when `synchronous_standby_names` is emptied and reloaded (the checkpointer sees the new
//! value and releases every waiter: no standby is required any more, the values are handed
//! out); at a cancel (57014, nothing handed out); at a termination (the session ends).

use std::cell::Cell;

use pgrx::pg_sys;
use pgrx::prelude::*;

use crate::catalog::LocalSetting;
use crate::errors::{raise, Code};

/// Waits until the synchronous standbys, if any are configured, confirmed WAL up to `upto`
/// (already flushed locally). `what` names the reservation in the error of a cancelled wait,
/// `hint` says what becomes of its values. Runs with no LWLock held.
pub fn wait(upto: pg_sys::XLogRecPtr, what: &str, hint: &str) {
    if reached(upto) {
        return; // no synchronous standby named, or already confirmed: no GUC nest level
    }
    // The reserved values are shared by every session: whether synchronous standbys confirm them
    // must not depend on the synchronous_commit of the session that happens to reserve. A weaker
    // setting (off, local, remote_write) is raised to `on` for the wait, in a GUC nest level of
    // its own; remote_apply is kept.
    // SAFETY: reads the backend's current value of the setting.
    let weak = unsafe { pg_sys::synchronous_commit }
        < pg_sys::SyncCommitLevel::SYNCHRONOUS_COMMIT_REMOTE_FLUSH as i32;
    let _raised = weak.then(|| LocalSetting::set(c"synchronous_commit", c"on"));
    // SAFETY: SyncRepWaitForLSN must run with interrupts held, as RecordTransactionCommit does
    // (it asserts so on assert-enabled builds): a cancel or termination during the wait is
    // turned into a WARNING and the wait ends (checked below); interrupts are serviced again at
    // the next CHECK_FOR_INTERRUPTS after RESUME. No Drop guard for the count: an ERROR inside
    // resets InterruptHoldoffCount to 0 (errfinish).
    let cancelled = unsafe {
        pg_sys::InterruptHoldoffCount += 1; // HOLD_INTERRUPTS()
        pg_sys::SyncRepWaitForLSN(upto, false);
        let cancelled = !confirmed(upto) && cancel_ended_wait(upto);
        pg_sys::InterruptHoldoffCount -= 1; // RESUME_INTERRUPTS()
        cancelled
    };
    // A termination request ended the wait and is still pending: die here, before the values
    // (not confirmed by the standbys) are handed out.
    pgrx::check_for_interrupts!();
    // A cancel (statement_timeout, pg_cancel_backend, ^C) also ends the wait, but
    // SyncRepWaitForLSN consumes it (QueryCancelPending = false, WARNING "canceling wait for
    // synchronous replication"). For a commit that is the end of the transaction; here the
    // statement would go on, hand out values the standbys never confirmed (a failover could
    // issue them again) and block again at its next reservation, the cancel lost. So a wait
    // that a cancel ended is a cancelled statement.
    if cancelled {
        raise(
            Code::ERRCODE_QUERY_CANCELED,
            format!("canceling statement: the wait for synchronous standbys to confirm {what} was cancelled"),
            Some(hint),
        );
    }
}

/// Why SyncRepWaitForLSN returned although the standbys did not confirm `upto`: true for a
/// cancel, false when no synchronous standby is required any more. Interrupts are held.
///
/// SyncRepWaitForLSN returns short of the LSN in three cases: a cancel (QueryCancelPending,
/// which it clears), a termination (ProcDiePending, left set: the caller dies), and
/// synchronous replication switched off — the checkpointer, after a reload that emptied
/// `synchronous_standby_names`, clears the shared flag and releases every waiter, or the flag
/// was already clear and it did not wait at all. This backend's own copy of the setting still
/// names the standbys until it reloads between statements, so it cannot tell; nor can the flag
/// be read here: its name, type and meaning changed in minor releases (`bool
/// sync_standbys_defined`, then `bits8 sync_standbys_status` where 1 means "initialised, none
/// defined", what `true` meant "defined" before).
///
/// A cancel always sets InterruptPending, which nothing clears while interrupts are held: with
/// it clear, the wait ended because no standby is required. With it set (a cancel, or an
/// unrelated interrupt such as a barrier or client_connection_check_interval), ask
/// SyncRepWaitForLSN itself whether it would still wait, with a cancel already pending: it
/// consumes the cancel (it would wait: standbys are required, the wait was cancelled) or
/// returns without looking at it (none is required).
unsafe fn cancel_ended_wait(upto: pg_sys::XLogRecPtr) -> bool {
    // SAFETY (whole function): backend-local interrupt flags and the emit_log_hook global,
    // with interrupts held by the caller, as SyncRepWaitForLSN requires.
    unsafe {
        if pg_sys::ProcDiePending != 0 {
            return false; // the caller's CHECK_FOR_INTERRUPTS ends the session
        }
        if pg_sys::InterruptPending == 0 {
            return false;
        }
        pg_sys::QueryCancelPending = 1;
        // The probe's cancel is not reported: its WARNING would repeat the one of the real
        // cancel (or announce a cancel nobody asked for). emit_log_hook sees the reports that
        // go to the server log: with log_min_messages above warning, the client still gets it.
        let previous = pg_sys::emit_log_hook;
        PREVIOUS_HOOK.with(|p| p.set(previous));
        pg_sys::emit_log_hook = Some(silence_probe);
        pg_sys::SyncRepWaitForLSN(upto, false);
        pg_sys::emit_log_hook = previous;
        let would_wait = pg_sys::QueryCancelPending == 0;
        pg_sys::QueryCancelPending = 0;
        would_wait && !confirmed(upto)
    }
}

thread_local! {
    static PREVIOUS_HOOK: Cell<pg_sys::emit_log_hook_type> = const { Cell::new(None) };
}

/// emit_log_hook while the probe runs: the only message it can raise is SyncRepWaitForLSN's
/// WARNING for the probe's own cancel, which is sent neither to the client nor to the log.
/// Other reports go to the hook installed before, if any. A C hook reports errors by
/// `siglongjmp`: pgrx's FFI guard turns that into a Rust unwind, hence the allowed lint.
#[pg_guard]
#[allow(ffi_unwind_calls)]
unsafe extern "C-unwind" fn silence_probe(edata: *mut pg_sys::ErrorData) {
    // SAFETY: `edata` is the report being emitted (EmitErrorReport); the previous hook was read
    // from emit_log_hook just before ours was installed.
    unsafe {
        if (*edata).elevel == pg_sys::WARNING as i32 {
            (*edata).output_to_client = false;
            (*edata).output_to_server = false;
        } else if let Some(previous) = PREVIOUS_HOOK.with(|p| p.get()) {
            pg_sys::ffi::pg_guard_ffi_boundary(|| previous(edata));
        }
    }
}

/// Whether the synchronous standbys confirmed (flushed) WAL up to `upto`, whatever the settings.
fn confirmed(upto: pg_sys::XLogRecPtr) -> bool {
    // SAFETY: WalSndCtl in shared memory (set up at startup). The LSNs there only increase and
    // are 8-byte aligned: a read without SyncRepLock sees an old or a new value, and an old one
    // can only make us ask once more.
    unsafe {
        let ctl = pg_sys::WalSndCtl;
        std::ptr::read_volatile(&raw const (*ctl).lsn[pg_sys::SYNC_REP_WAIT_FLUSH as usize]) >= upto
    }
}

/// Whether the synchronous standbys, if any are named, have confirmed (flushed) WAL up to
/// `upto`: what SyncRepWaitForLSN(upto, commit = false) waits for with synchronous_commit at
/// least `on`, the level every reservation waits at (`wait` raises weaker settings; remote_apply
/// is capped at flush when commit = false). True when none is named or WAL senders are off.
/// `synchronous_standby_names` is this backend's copy of the setting (see `cancel_ended_wait`
/// for why the shared flag is not read); after a reload that empties it, a statement running
/// across the reload still sees the old value, waits, and SyncRepWaitForLSN returns at once.
pub fn reached(upto: pg_sys::XLogRecPtr) -> bool {
    // SAFETY: GUC variables of this backend.
    unsafe {
        let names = pg_sys::SyncRepStandbyNames;
        if pg_sys::max_wal_senders == 0 || names.is_null() || *names == 0 {
            return true;
        }
    }
    confirmed(upto)
}
