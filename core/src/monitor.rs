//! What the monitor (the server's `pg_idgen monitor` background worker) warns about ahead of
//! time, as pure arithmetic: how close the layout's time field is to its end, whether a segment
//! tag reaches the largest bigint within the horizon at its rate, and whether the instance's
//! worker-id slots are nearly used up.

/// Within this many ms of the end of the time field the warning becomes urgent (and is repeated
/// every hour rather than once per check interval).
pub const URGENT_MS: i64 = 30 * 86_400_000;

/// Share of the worker-id slots in use from which the monitor warns, in percent.
pub const SLOTS_WARN_PERCENT: u64 = 90;

/// How far away an end is, as the monitor reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Urgency {
    /// Beyond the horizon (or the horizon is 0: warnings off).
    None,
    /// Within the horizon.
    Warn,
    /// Within [`URGENT_MS`], or already passed.
    Urgent,
}

/// Classifies an end at `end_ms` seen at `now_ms` with a horizon of `horizon_ms` (0: off).
pub fn urgency(end_ms: i64, now_ms: i64, horizon_ms: i64) -> Urgency {
    if horizon_ms <= 0 {
        return Urgency::None;
    }
    let left = end_ms.saturating_sub(now_ms);
    if left <= URGENT_MS.min(horizon_ms) {
        Urgency::Urgent
    } else if left <= horizon_ms {
        Urgency::Warn
    } else {
        Urgency::None
    }
}

/// Whether `used` of `capacity` worker-id slots is at or above [`SLOTS_WARN_PERCENT`].
pub fn slots_nearly_full(used: u64, capacity: u64) -> bool {
    capacity > 0 && used.saturating_mul(100) >= capacity.saturating_mul(SLOTS_WARN_PERCENT)
}

/// When a tag with `headroom` values left to its maximum runs out, at the rate of `issued`
/// values over `elapsed_ms`: the ms from now, or None when there is no rate to go by (nothing
/// issued, or no time elapsed). A tag with no headroom left runs out now (0).
pub fn runs_out_in_ms(headroom: i128, issued: i64, elapsed_ms: i64) -> Option<i64> {
    if headroom <= 0 {
        return Some(0);
    }
    if issued <= 0 || elapsed_ms <= 0 {
        return None;
    }
    let ms = headroom.saturating_mul(elapsed_ms as i128) / issued as i128;
    Some(ms.min(i64::MAX as i128) as i64)
}

/// A duration in ms as the warnings print it: "N days" (rounded down), hours below two days,
/// minutes below two hours.
pub fn describe_ms(ms: i64) -> String {
    if ms <= 0 {
        return "no time".to_string();
    }
    let hours = ms / 3_600_000;
    if hours < 2 {
        format!("{} minute(s)", ms / 60_000)
    } else if hours < 48 {
        format!("{hours} hour(s)")
    } else {
        format!("{} days", ms / 86_400_000)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DAY: i64 = 86_400_000;
    const YEAR: i64 = 365 * DAY;

    #[test]
    fn time_field_end_levels() {
        let now = 1_700_000_000_000;
        assert_eq!(urgency(now + 2 * YEAR, now, YEAR), Urgency::None);
        assert_eq!(urgency(now + YEAR + 1, now, YEAR), Urgency::None);
        assert_eq!(urgency(now + YEAR, now, YEAR), Urgency::Warn);
        assert_eq!(urgency(now + 31 * DAY, now, YEAR), Urgency::Warn);
        assert_eq!(urgency(now + 30 * DAY, now, YEAR), Urgency::Urgent);
        assert_eq!(urgency(now + 1, now, YEAR), Urgency::Urgent);
        assert_eq!(urgency(now - DAY, now, YEAR), Urgency::Urgent, "already passed");
        assert_eq!(urgency(now + DAY, now, 0), Urgency::None, "horizon 0 turns warnings off");
        // a horizon shorter than 30 days: everything within it is urgent
        assert_eq!(urgency(now + 5 * DAY, now, 7 * DAY), Urgency::Urgent);
        assert_eq!(urgency(now + 8 * DAY, now, 7 * DAY), Urgency::None);
        assert_eq!(urgency(i64::MAX, i64::MIN, YEAR), Urgency::None, "no overflow");
    }

    #[test]
    fn slots() {
        assert!(!slots_nearly_full(0, 256));
        assert!(!slots_nearly_full(230, 256));
        assert!(slots_nearly_full(231, 256));
        assert!(slots_nearly_full(256, 256));
        assert!(!slots_nearly_full(5, 0));
    }

    #[test]
    fn tag_rate() {
        // 1000 values in 1 s, 1e6 left: 1000 s
        assert_eq!(runs_out_in_ms(1_000_000, 1000, 1000), Some(1_000_000));
        assert_eq!(runs_out_in_ms(1_000_000, 0, 1000), None);
        assert_eq!(runs_out_in_ms(1_000_000, 10, 0), None);
        assert_eq!(runs_out_in_ms(0, 0, 0), Some(0));
        assert_eq!(runs_out_in_ms(-5, 1, 1), Some(0));
        assert_eq!(runs_out_in_ms(i64::MAX as i128, 1, i64::MAX), Some(i64::MAX), "saturates");
    }

    #[test]
    fn durations() {
        assert_eq!(describe_ms(0), "no time");
        assert_eq!(describe_ms(5 * 3_600_000), "5 hour(s)");
        assert_eq!(describe_ms(119 * 60_000 + 59_999), "119 minute(s)");
        assert_eq!(describe_ms(30_000), "0 minute(s)");
        assert_eq!(describe_ms(47 * 3_600_000 + 1), "47 hour(s)");
        assert_eq!(describe_ms(50 * DAY + 5), "50 days");
    }
}
