//! Waiting for synchronous standbys to confirm a reservation (segment and snowflake), as a
//! commit waits: the values of a reservation are only handed out once every synchronous
//! standby has it, so a failover to one of them never hands them out again.

use pgrx::pg_sys;

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
    unsafe {
        pg_sys::InterruptHoldoffCount += 1; // HOLD_INTERRUPTS()
        pg_sys::SyncRepWaitForLSN(upto, false);
        pg_sys::InterruptHoldoffCount -= 1; // RESUME_INTERRUPTS()
    }
    // A termination request ended the wait and is still pending: die here, before the values
    // (not confirmed by the standbys) are handed out.
    pgrx::check_for_interrupts!();
    // A cancel (statement_timeout, pg_cancel_backend, ^C) also ends the wait, but
    // SyncRepWaitForLSN consumes it (QueryCancelPending = false, WARNING "canceling wait for
    // synchronous replication"). For a commit that is the end of the transaction; here the
    // statement would go on, hand out values the standbys never confirmed (a failover could
    // issue them again) and block again at its next reservation, the cancel lost. So a wait
    // that ended short of `upto` is a cancelled statement.
    if !reached(upto) {
        raise(
            Code::ERRCODE_QUERY_CANCELED,
            format!("canceling statement: the wait for synchronous standbys to confirm {what} was cancelled"),
            Some(hint),
        );
    }
}

/// Whether the synchronous standbys, if any are named, have confirmed (flushed) WAL up to
/// `upto`: what SyncRepWaitForLSN(upto, commit = false) waits for with synchronous_commit at
/// least `on`, the level every reservation waits at (`wait` raises weaker settings; remote_apply
/// is capped at flush when commit = false). True when none is named or WAL senders are off.
/// `synchronous_standby_names` is read from the setting rather than from WalSndCtl's flag, whose
/// name and type differ between minor releases.
pub fn reached(upto: pg_sys::XLogRecPtr) -> bool {
    // SAFETY: GUC variables of this backend, and WalSndCtl in shared memory (set up at startup).
    // The LSNs there only increase and are 8-byte aligned: a read without SyncRepLock sees an
    // old or a new value, and an old one can only make us report "not reached" after a wait
    // that ended early anyway, or wait once more.
    unsafe {
        let names = pg_sys::SyncRepStandbyNames;
        if pg_sys::max_wal_senders == 0 || names.is_null() || *names == 0 {
            return true;
        }
        let ctl = pg_sys::WalSndCtl;
        std::ptr::read_volatile(&raw const (*ctl).lsn[pg_sys::SYNC_REP_WAIT_FLUSH as usize]) >= upto
    }
}
