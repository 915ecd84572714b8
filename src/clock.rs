//! The clocks and time conversions: the system clock as Unix milliseconds (what ids carry), a
//! monotonic clock for deadlines, and timestamptz <-> Unix milliseconds.

use pgrx::prelude::*;

use crate::errors::{raise, Code};

/// Unix milliseconds of PostgreSQL's epoch, 2000-01-01T00:00:00Z.
const PG_EPOCH_UNIX_MS: i64 = 946_684_800_000;

/// The system clock (`CLOCK_REALTIME`) in Unix milliseconds. Called once per generated id, so
/// it goes to `clock_gettime` directly: `SystemTime::now()` and its `Duration` arithmetic cost a
/// third more here (and libfaketime intercepts both alike).
#[inline]
pub fn now_unix_ms() -> i64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: CLOCK_REALTIME cannot fail with a valid pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut ts) };
    ts.tv_sec * 1000 + ts.tv_nsec / 1_000_000
}

/// A monotonic clock in milliseconds (`CLOCK_MONOTONIC`), for deadlines: a step of the system
/// clock must not stretch or shorten a wait.
#[inline]
pub fn monotonic_ms() -> i64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: CLOCK_MONOTONIC cannot fail with a valid pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec * 1000 + ts.tv_nsec / 1_000_000
}

/// `CLOCK_BOOTTIME` in milliseconds: monotonic, and it also counts the time the machine was
/// suspended. The lease's local validity is measured on it, so that a node that slept through
/// the end of its lease (a suspended laptop or VM) does not wake up counting it valid
/// (`CLOCK_MONOTONIC` stops during a suspend). libfaketime leaves it alone, as it does
/// `CLOCK_MONOTONIC` with `FAKETIME_DONT_FAKE_MONOTONIC`.
#[inline]
pub fn boottime_ms() -> i64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: CLOCK_BOOTTIME (Linux 2.6.39+) cannot fail with a valid pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_BOOTTIME, &mut ts) };
    ts.tv_sec * 1000 + ts.tv_nsec / 1_000_000
}

/// A PostgreSQL timestamp (µs since 2000-01-01) as Unix milliseconds (rounded down).
pub fn pg_timestamp_to_unix_ms(us: i64) -> i64 {
    us.div_euclid(1000).saturating_add(PG_EPOCH_UNIX_MS)
}

/// How far the sender of streaming replication (the primary, or the upstream standby of a
/// cascading one) was ahead of this server's clock in its last message to the WAL receiver
/// (`pg_idgen_core::generator::observed_sender_lead_ms`, less that message's delay), and this
/// server's clock when it arrived (Unix ms). `None` when no WAL receiver has received a message
/// since the server started. The pair is read twice until both reads agree, so that the two
/// times belong to the same message (the WAL receiver writes them together under its spinlock).
pub fn walreceiver_sender_lead() -> Option<(i64, i64)> {
    // SAFETY: WalRcv points into shared memory created at postmaster start (inherited by every
    // child); both fields are 8-byte aligned integers, read with volatile loads.
    unsafe {
        let w = pgrx::pg_sys::WalRcv;
        if w.is_null() {
            return None;
        }
        let read = || {
            (
                std::ptr::read_volatile(&raw const (*w).lastMsgSendTime),
                std::ptr::read_volatile(&raw const (*w).lastMsgReceiptTime),
            )
        };
        for _ in 0..100 {
            let a = read();
            std::sync::atomic::fence(std::sync::atomic::Ordering::Acquire);
            if read() == a {
                return pg_idgen_core::generator::observed_sender_lead_ms(a.0, a.1)
                    .map(|lead| (lead, pg_timestamp_to_unix_ms(a.1)));
            }
        }
        None
    }
}

pub fn ms_to_timestamptz(unix_ms: i64) -> TimestampWithTimeZone {
    let us = (unix_ms as i128 - PG_EPOCH_UNIX_MS as i128) * 1000;
    i64::try_from(us).ok().and_then(|us| TimestampWithTimeZone::try_from(us).ok()).unwrap_or_else(|| {
        raise(
            Code::ERRCODE_DATETIME_FIELD_OVERFLOW,
            format!("{unix_ms} ms since 1970 is out of range for timestamptz"),
            None,
        )
    })
}

pub fn timestamptz_to_ms(ts: TimestampWithTimeZone) -> i64 {
    if !ts.is_finite() {
        raise(Code::ERRCODE_DATETIME_FIELD_OVERFLOW, "timestamp must be finite", None);
    }
    let us: i64 = ts.into();
    us.div_euclid(1000) + PG_EPOCH_UNIX_MS
}

pub fn fmt_ms(ms: i128) -> String {
    pg_idgen_core::layout::format_unix_ms(ms)
}
