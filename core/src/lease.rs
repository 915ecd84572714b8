//! Worker id leases: the arithmetic the server side shares between the lease worker
//! and the hot path, kept here so that it is tested without a server.
//!
//! * The hot path reads one 64-bit word: the leased worker id + 1 in the high 24 bits (0: none)
//!   and the end of the local validity, `CLOCK_BOOTTIME` milliseconds, in the low 40 bits
//!   (0: not valid; 2^40 ms is 34 years of uptime).
//! * The local validity of a lease granted by a round trip that started at monotonic `t0` is
//!   `t0 + ttl - margin`, with the margin at most half the ttl.

/// Bits of the validity in the word; the worker id takes the rest.
pub const VALID_BITS: u32 = 40;
const VALID_MASK: u64 = (1 << VALID_BITS) - 1;
/// Highest worker id a word can hold.
pub const MAX_WORKER: i64 = (1 << (64 - VALID_BITS)) - 2;

/// Packs a worker id (or none) and a validity end (monotonic ms; 0 = not valid). Ids above
/// [`MAX_WORKER`] and negative ones are not representable: the caller refuses them before.
pub fn pack(worker: Option<i64>, valid_until_ms: u64) -> u64 {
    let id = worker.filter(|w| (0..=MAX_WORKER).contains(w)).map_or(0, |w| w as u64 + 1);
    id << VALID_BITS | (valid_until_ms.min(VALID_MASK))
}

/// The worker id and validity end of a packed word.
#[inline]
pub fn unpack(word: u64) -> (Option<i64>, u64) {
    let id = word >> VALID_BITS;
    ((id != 0).then(|| id as i64 - 1), word & VALID_MASK)
}

/// Whether `word` lets `worker` generate at monotonic time `now_ms`.
#[inline]
pub fn valid_for(word: u64, worker: i64, now_ms: u64) -> bool {
    let (id, until) = unpack(word);
    id == Some(worker) && now_ms < until
}

/// The margin actually used: at most half the ttl.
pub fn effective_margin_ms(ttl_ms: i64, margin_ms: i64) -> i64 {
    margin_ms.clamp(0, ttl_ms / 2)
}

/// End of the local validity of a lease whose round trip started at monotonic `t0_ms`.
pub fn valid_until_ms(t0_ms: i64, ttl_ms: i64, margin_ms: i64) -> u64 {
    (t0_ms + ttl_ms - effective_margin_ms(ttl_ms, margin_ms)).max(0) as u64
}

/// Parses a range of worker ids, `lo-hi`, both within 0 ..= `max`.
pub fn parse_range(text: &str, max: i64) -> Result<(i64, i64), String> {
    let (lo, hi) =
        text.trim().split_once('-').ok_or_else(|| format!("\"{text}\" is not a range \"lo-hi\""))?;
    let parse = |v: &str| v.trim().parse::<i64>().map_err(|_| format!("\"{}\" is not an integer", v.trim()));
    let (lo, hi) = (parse(lo)?, parse(hi)?);
    if lo < 0 || lo > hi || hi > max {
        return Err(format!(
            "the range must satisfy 0 <= lo <= hi <= {max} (the layout's largest worker id)"
        ));
    }
    Ok((lo, hi))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_round_trip() {
        assert_eq!(unpack(pack(None, 0)), (None, 0));
        assert_eq!(unpack(0), (None, 0));
        for w in [0, 1, 1023, 8191, 1 << 20, MAX_WORKER] {
            for v in [0, 1, 123_456_789, VALID_MASK] {
                assert_eq!(unpack(pack(Some(w), v)), (Some(w), v), "{w} {v}");
            }
        }
        // not representable: no id (never another one)
        assert_eq!(unpack(pack(Some(MAX_WORKER + 1), 5)), (None, 5));
        assert_eq!(unpack(pack(Some(-1), 5)), (None, 5));
        // a validity beyond 40 bits saturates, it never spills into the id
        assert_eq!(unpack(pack(Some(3), u64::MAX)), (Some(3), VALID_MASK));
    }

    #[test]
    fn validity() {
        let w = pack(Some(7), 10_000);
        assert!(valid_for(w, 7, 9_999));
        assert!(!valid_for(w, 7, 10_000));
        assert!(!valid_for(w, 8, 0));
        assert!(!valid_for(pack(Some(7), 0), 7, 0));
        assert!(!valid_for(pack(None, 10_000), 0, 0));
        // t0 + ttl - margin, the margin at most half the ttl
        assert_eq!(valid_until_ms(1_000, 30_000, 5_000), 26_000);
        assert_eq!(valid_until_ms(1_000, 6_000, 1_000), 6_000);
        assert_eq!(valid_until_ms(1_000, 4_000, 10_000), 3_000);
        assert_eq!(valid_until_ms(-50_000, 6_000, 1_000), 0);
    }

    #[test]
    fn ranges() {
        assert_eq!(parse_range("0-1023", 1023), Ok((0, 1023)));
        assert_eq!(parse_range(" 5 - 5 ", 1023), Ok((5, 5)));
        for bad in ["", "abc", "5", "5-", "-5", "7-3", "0-1024", "x-3", "3-x", "-1-3"] {
            assert!(parse_range(bad, 1023).is_err(), "{bad:?}");
        }
        assert!(parse_range("abc", 1023).unwrap_err().contains("is not a range"));
        assert!(parse_range("5-2000", 1023).unwrap_err().contains("hi <= 1023"));
    }
}
