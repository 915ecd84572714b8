//! Bit layouts of 64-bit time-ordered ids: widths, time unit, epoch, field order, and the
//! encode/decode arithmetic. Everything here is plain integer math, checked, never wrapping.

use std::fmt;

/// Where the machine (worker) field sits relative to the sequence field.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FieldOrder {
    /// `time | worker | sequence` (Twitter, Instagram, Baidu, ShardingSphere, pgEdge, ours).
    WorkerAboveSequence,
    /// `time | sequence | worker` (Sonyflake keeps its sequence above the machine id).
    SequenceAboveWorker,
}

/// How the worker field of a named layout is split into sub-fields (for decoding only).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WorkerSplit {
    /// Name of the high sub-field, e.g. `datacenter_id`.
    pub high_name: &'static str,
    /// Name of the low sub-field, e.g. `worker_id`.
    pub low_name: &'static str,
    /// Width of the low sub-field in bits.
    pub low_bits: u32,
}

/// A complete description of an id layout.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layout {
    /// `default`, a named layout, or `custom`.
    pub name: String,
    /// Epoch as milliseconds since 1970-01-01T00:00:00Z (UTC, never a local time zone).
    pub epoch_ms: i64,
    /// Length of one tick of the time field, in milliseconds (>= 1).
    pub unit_ms: i64,
    pub time_bits: u32,
    pub worker_bits: u32,
    pub sequence_bits: u32,
    pub order: FieldOrder,
    /// Discord's layout is published for decoding only: it never generates.
    pub decode_only: bool,
    pub split: Option<WorkerSplit>,
}

/// The ids a layout's parts are checked against.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Parts {
    /// Ticks since the epoch (in units of `unit_ms`).
    pub time: u64,
    pub worker: u64,
    pub sequence: u64,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LayoutError {
    UnknownLayout(String),
    Syntax(String),
    Widths { time: u32, worker: u32, sequence: u32, total: u32 },
    Unit(i64),
    DecodeOnly(String),
    Split { low_bits: u32, worker_bits: u32 },
}

impl fmt::Display for LayoutError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LayoutError::UnknownLayout(n) => write!(
                f,
                "unknown layout \"{n}\"; use default, twitter, instagram, sonyflake, sonyflake_v2, \
                 baidu, shardingsphere, pgedge, js53 or a custom spec such as \
                 \"time=41,worker=10,sequence=12,unit_ms=1,epoch=2026-01-01\""
            ),
            LayoutError::Syntax(m) => write!(f, "invalid layout spec: {m}"),
            LayoutError::Widths { time, worker, sequence, total } => write!(
                f,
                "layout widths time={time} + worker={worker} + sequence={sequence} = {total} bits; \
                 they must add up to at most 63 (64 for a decode-only layout whose top time bit is the sign \
                 bit), with at least 20 time bits and 1 to 31 bits each for worker and sequence"
            ),
            LayoutError::Unit(u) => write!(f, "time unit must be between 1 and 86400000 ms, got {u}"),
            LayoutError::Split { low_bits, worker_bits } => write!(
                f,
                "worker_low_bits {low_bits} must be between 1 and worker_bits - 1 ({})",
                worker_bits.saturating_sub(1)
            ),
            LayoutError::DecodeOnly(n) => {
                write!(f, "layout \"{n}\" uses the sign bit and can only decode ids, not generate them")
            }
        }
    }
}

impl std::error::Error for LayoutError {}

/// Errors of encoding and decoding individual ids.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum IdError {
    Negative(i64),
    /// An id whose bits the layout cannot hold (only possible for layouts narrower than 63 bits).
    TooWide(i64),
    TimeOutOfRange {
        ticks: i128,
        max: u64,
    },
    WorkerOutOfRange {
        worker: i64,
        max: u64,
    },
    SequenceOutOfRange {
        sequence: i64,
        max: u64,
    },
}

impl fmt::Display for IdError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            IdError::Negative(id) => write!(f, "id {id} is negative; ids of this layout are positive"),
            IdError::TooWide(id) => write!(f, "id {id} has bits set above the layout's fields"),
            IdError::TimeOutOfRange { ticks, max } => write!(
                f,
                "time {ticks} ticks since the layout's epoch is outside its time field (0 .. {max})"
            ),
            IdError::WorkerOutOfRange { worker, max } => {
                write!(f, "worker id {worker} is out of range for this layout (0 .. {max})")
            }
            IdError::SequenceOutOfRange { sequence, max } => {
                write!(f, "sequence {sequence} is out of range for this layout (0 .. {max})")
            }
        }
    }
}

impl std::error::Error for IdError {}

/// 2026-01-01T00:00:00Z in Unix milliseconds: the epoch of the default layout.
pub const DEFAULT_EPOCH_MS: i64 = 1_767_225_600_000;

/// The largest integer a JavaScript number (an IEEE 754 double) holds exactly: 2^53 − 1.
pub const JS_MAX_SAFE_INTEGER: i64 = (1 << 53) - 1;

/// Names of every built-in layout, in the order docs/snowflake-ids.md lists them.
pub const NAMED_LAYOUTS: &[&str] = &[
    "default",
    "twitter",
    "discord",
    "instagram",
    "sonyflake",
    "sonyflake_v2",
    "baidu",
    "shardingsphere",
    "pgedge",
    "js53",
];

const fn mask(bits: u32) -> u64 {
    if bits >= 64 {
        u64::MAX
    } else {
        (1u64 << bits) - 1
    }
}

impl Layout {
    fn named(
        name: &str,
        epoch_ms: i64,
        unit_ms: i64,
        (time_bits, worker_bits, sequence_bits): (u32, u32, u32),
        order: FieldOrder,
        split: Option<WorkerSplit>,
    ) -> Layout {
        Layout {
            name: name.to_string(),
            epoch_ms,
            unit_ms,
            time_bits,
            worker_bits,
            sequence_bits,
            order,
            decode_only: name == "discord",
            split,
        }
    }

    /// A built-in layout by name (`default`, `twitter`, ..., and the decode-only `discord`).
    pub fn by_name(name: &str) -> Option<Layout> {
        use FieldOrder::*;
        let twitter_split = WorkerSplit { high_name: "datacenter_id", low_name: "worker_id", low_bits: 5 };
        let discord_split = WorkerSplit { high_name: "worker_id", low_name: "process_id", low_bits: 5 };
        let l = match name {
            "default" => Self::named(name, DEFAULT_EPOCH_MS, 1, (41, 10, 12), WorkerAboveSequence, None),
            "twitter" => Self::named(
                name,
                1_288_834_974_657,
                1,
                (41, 10, 12),
                WorkerAboveSequence,
                Some(twitter_split),
            ),
            // 2015-01-01T00:00:00Z
            "discord" => Self::named(
                name,
                1_420_070_400_000,
                1,
                (42, 10, 12),
                WorkerAboveSequence,
                Some(discord_split),
            ),
            "instagram" => Self::named(name, 1_314_220_021_721, 1, (41, 13, 10), WorkerAboveSequence, None),
            // 2014-09-01T00:00:00Z
            "sonyflake" => Self::named(name, 1_409_529_600_000, 10, (39, 16, 8), SequenceAboveWorker, None),
            // 2025-01-01T00:00:00Z
            "sonyflake_v2" => {
                Self::named(name, 1_735_689_600_000, 10, (39, 16, 8), SequenceAboveWorker, None)
            }
            // 2016-05-20T00:00:00+08:00 = 2016-05-19T16:00:00Z
            "baidu" => Self::named(name, 1_463_673_600_000, 1000, (28, 22, 13), WorkerAboveSequence, None),
            // 2016-11-01T00:00:00Z
            "shardingsphere" => {
                Self::named(name, 1_477_958_400_000, 1, (41, 10, 12), WorkerAboveSequence, None)
            }
            // 2023-01-01T00:00:00Z
            "pgedge" => Self::named(name, 1_672_531_200_000, 1, (41, 10, 12), WorkerAboveSequence, None),
            // JavaScript-safe: 37 bits of 10 ms + 6 + 10 = 53 bits, so every id of the layout's
            // lifetime (2026-01-01 .. 2069-07) is at most 2^53 − 1 (Number.MAX_SAFE_INTEGER).
            "js53" => Self::named(name, DEFAULT_EPOCH_MS, 10, (37, 6, 10), WorkerAboveSequence, None),
            _ => return None,
        };
        Some(l)
    }

    /// Parses a generation layout setting: a built-in name, or a custom spec of comma-separated
    /// `key=value` pairs: `time`, `worker`, `sequence` (bits, required), `unit_ms` (default 1),
    /// `epoch` (RFC 3339 date or date-time with `Z` or an offset, or Unix milliseconds; default
    /// 2026-01-01T00:00:00Z) and `order` (`worker_sequence`, the default, or `sequence_worker`).
    pub fn parse(spec: &str) -> Result<Layout, LayoutError> {
        let spec = spec.trim();
        if !spec.contains('=') {
            return Layout::by_name(&spec.to_ascii_lowercase())
                .ok_or_else(|| LayoutError::UnknownLayout(spec.to_string()));
        }
        let mut time = None;
        let mut worker = None;
        let mut sequence = None;
        let mut unit_ms = 1i64;
        let mut epoch_ms = DEFAULT_EPOCH_MS;
        let mut order = FieldOrder::WorkerAboveSequence;
        for pair in spec.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (k, v) = pair
                .split_once('=')
                .ok_or_else(|| LayoutError::Syntax(format!("\"{pair}\" is not key=value")))?;
            let (k, v) = (k.trim().to_ascii_lowercase(), v.trim());
            let bits = |v: &str| {
                v.parse::<u32>().map_err(|_| LayoutError::Syntax(format!("{k}: \"{v}\" is not a bit width")))
            };
            match k.as_str() {
                "time" => time = Some(bits(v)?),
                "worker" => worker = Some(bits(v)?),
                "sequence" => sequence = Some(bits(v)?),
                "unit_ms" => {
                    unit_ms = v
                        .parse()
                        .map_err(|_| LayoutError::Syntax(format!("unit_ms: \"{v}\" is not an integer")))?
                }
                "epoch" => epoch_ms = parse_epoch(v)?,
                "order" => {
                    order = match v {
                        "worker_sequence" => FieldOrder::WorkerAboveSequence,
                        "sequence_worker" => FieldOrder::SequenceAboveWorker,
                        _ => {
                            return Err(LayoutError::Syntax(format!(
                                "order: \"{v}\" must be worker_sequence or sequence_worker"
                            )))
                        }
                    }
                }
                _ => return Err(LayoutError::Syntax(format!("unknown key \"{k}\""))),
            }
        }
        let (Some(time_bits), Some(worker_bits), Some(sequence_bits)) = (time, worker, sequence) else {
            return Err(LayoutError::Syntax("time, worker and sequence widths are all required".into()));
        };
        let layout = Layout {
            name: "custom".into(),
            epoch_ms,
            unit_ms,
            time_bits,
            worker_bits,
            sequence_bits,
            order,
            decode_only: false,
            split: None,
        };
        layout.validate()?;
        Ok(layout)
    }

    /// A layout registered for decoding (`uid_layout_register`): at most 63 bits (the unused top bits are
    /// always zero), or 64 of which the top time bit is the sign (Discord, Instagram); at least
    /// 20 time bits; 1–31 bits each for worker and
    /// sequence (they are SQL `int`s). `worker_low_bits` splits the worker field in two.
    #[allow(clippy::too_many_arguments)]
    pub fn registered(
        name: &str,
        epoch_ms: i64,
        unit_ms: i64,
        time_bits: u32,
        worker_bits: u32,
        sequence_bits: u32,
        order: FieldOrder,
        worker_low_bits: Option<u32>,
    ) -> Result<Layout, LayoutError> {
        let split = match worker_low_bits {
            None => None,
            Some(b) if (1..worker_bits).contains(&b) => {
                Some(WorkerSplit { high_name: "worker_high", low_name: "worker_low", low_bits: b })
            }
            Some(b) => return Err(LayoutError::Split { low_bits: b, worker_bits }),
        };
        let mut layout =
            Layout::named(name, epoch_ms, unit_ms, (time_bits, worker_bits, sequence_bits), order, split);
        layout.decode_only = layout.total_bits() == 64;
        layout.check_fields(true)?;
        Ok(layout)
    }

    /// Checks widths and unit of a layout that must generate ids.
    pub fn validate(&self) -> Result<(), LayoutError> {
        if self.decode_only {
            return Err(LayoutError::DecodeOnly(self.name.clone()));
        }
        // Custom layouts have at most 63 bits (fewer keep the top bits zero: `js53` stays below
        // 2^53); Instagram's published layout is 64 bits wide, of which the top time bit is the
        // (always zero) sign bit.
        self.check_fields(self.name == "instagram")
    }

    /// Widths add up to at most 63 (or 64 where allowed: the top time bit is the sign bit), at
    /// least 20 time bits, 1–31 bits each for worker and sequence (they are SQL `int`s), a sane
    /// unit.
    fn check_fields(&self, allow_64_bits: bool) -> Result<(), LayoutError> {
        let total = self.total_bits();
        if !(total <= 63 || (allow_64_bits && total == 64))
            || self.time_bits < 20
            || !(1..=31).contains(&self.worker_bits)
            || !(1..=31).contains(&self.sequence_bits)
        {
            return Err(LayoutError::Widths {
                time: self.time_bits,
                worker: self.worker_bits,
                sequence: self.sequence_bits,
                total,
            });
        }
        if !(1..=86_400_000).contains(&self.unit_ms) {
            return Err(LayoutError::Unit(self.unit_ms));
        }
        Ok(())
    }

    /// A canonical, complete text form; two layouts are the same iff their canonical forms are.
    pub fn canonical(&self) -> String {
        format!(
            "time={},worker={},sequence={},unit_ms={},epoch={},order={}",
            self.time_bits,
            self.worker_bits,
            self.sequence_bits,
            self.unit_ms,
            self.epoch_ms,
            match self.order {
                FieldOrder::WorkerAboveSequence => "worker_sequence",
                FieldOrder::SequenceAboveWorker => "sequence_worker",
            }
        )
    }

    /// Largest tick a positive id can hold. A 64-bit layout (Discord, Instagram) gives its top
    /// time bit to the sign: ids are `bigint`s and never negative.
    pub fn max_time(&self) -> u64 {
        if self.total_bits() >= 64 {
            mask(self.time_bits - 1)
        } else {
            mask(self.time_bits)
        }
    }
    pub fn total_bits(&self) -> u32 {
        // Saturating: a spec can name absurd widths (time=4294967295), refused by check_fields.
        self.time_bits.saturating_add(self.worker_bits).saturating_add(self.sequence_bits)
    }
    /// The largest id the layout can hold: 2^total − 1 (2^63 − 1 for 63 and 64 bits). No id of
    /// the layout, over its whole lifetime, is larger.
    pub fn max_id(&self) -> i64 {
        mask(self.total_bits().min(63)) as i64
    }
    /// The first instant (Unix ms) after the time field: no id of the layout has a time at or
    /// after it.
    pub fn time_field_end_ms(&self) -> i128 {
        self.tick_to_unix_ms(self.max_time() + 1)
    }
    pub fn max_worker(&self) -> u64 {
        mask(self.worker_bits)
    }
    pub fn max_sequence(&self) -> u64 {
        mask(self.sequence_bits)
    }

    fn shifts(&self) -> (u32, u32, u32) {
        // (time shift, worker shift, sequence shift)
        match self.order {
            FieldOrder::WorkerAboveSequence => (self.worker_bits + self.sequence_bits, self.sequence_bits, 0),
            FieldOrder::SequenceAboveWorker => (self.worker_bits + self.sequence_bits, 0, self.worker_bits),
        }
    }

    /// Composes an id; every part is range-checked, nothing is truncated.
    #[inline]
    pub fn encode(&self, p: Parts) -> Result<i64, IdError> {
        if p.time > self.max_time() {
            return Err(IdError::TimeOutOfRange { ticks: p.time as i128, max: self.max_time() });
        }
        if p.worker > self.max_worker() {
            return Err(IdError::WorkerOutOfRange { worker: p.worker as i64, max: self.max_worker() });
        }
        if p.sequence > self.max_sequence() {
            return Err(IdError::SequenceOutOfRange {
                sequence: p.sequence as i64,
                max: self.max_sequence(),
            });
        }
        let (ts, ws, ss) = self.shifts();
        let raw = (p.time << ts) | (p.worker << ws) | (p.sequence << ss);
        // p.time <= max_time() keeps the sign bit clear.
        Ok(raw as i64)
    }

    /// Splits an id into its parts.
    pub fn decode(&self, id: i64) -> Result<Parts, IdError> {
        if id < 0 {
            return Err(IdError::Negative(id));
        }
        let raw = id as u64;
        let total = self.total_bits();
        if total < 64 && raw >> total != 0 {
            return Err(IdError::TooWide(id));
        }
        let (ts, ws, ss) = self.shifts();
        Ok(Parts {
            time: (raw >> ts) & self.max_time(),
            worker: (raw >> ws) & self.max_worker(),
            sequence: (raw >> ss) & self.max_sequence(),
        })
    }

    /// Unix milliseconds of the start of a tick.
    pub fn tick_to_unix_ms(&self, tick: u64) -> i128 {
        self.epoch_ms as i128 + tick as i128 * self.unit_ms as i128
    }

    /// The tick containing a Unix-millisecond instant (floor), unchecked against the field width:
    /// negative before the epoch.
    pub fn unix_ms_to_tick(&self, unix_ms: i64) -> i128 {
        // On the hot path (once per id) avoid 128-bit division: millisecond layouts need none,
        // and the difference of two realistic instants fits an i64.
        match unix_ms.checked_sub(self.epoch_ms) {
            Some(d) if self.unit_ms == 1 => d as i128,
            Some(d) => d.div_euclid(self.unit_ms) as i128,
            None => (unix_ms as i128 - self.epoch_ms as i128).div_euclid(self.unit_ms as i128),
        }
    }

    /// The tick containing `unix_ms`, checked against the time field.
    pub fn checked_tick(&self, unix_ms: i64) -> Result<u64, IdError> {
        let t = self.unix_ms_to_tick(unix_ms);
        if t < 0 || t > self.max_time() as i128 {
            return Err(IdError::TimeOutOfRange { ticks: t, max: self.max_time() });
        }
        Ok(t as u64)
    }

    /// Splits a worker value into its (high, low) sub-fields, if the layout has them.
    pub fn split_worker(&self, worker: u64) -> Option<(u64, u64)> {
        self.split.map(|s| (worker >> s.low_bits, worker & mask(s.low_bits)))
    }
}

/// Parses an epoch: Unix milliseconds, `YYYY-MM-DD` (UTC midnight), or
/// `YYYY-MM-DDTHH:MM:SS[.fff](Z|±HH:MM)`. A date-time without a zone is refused: an epoch is an
/// instant, never the server's local time.
pub fn parse_epoch(v: &str) -> Result<i64, LayoutError> {
    let err =
        || LayoutError::Syntax(format!("epoch \"{v}\" is not Unix milliseconds or an RFC 3339 UTC instant"));
    if let Ok(ms) = v.parse::<i64>() {
        return Ok(ms);
    }
    let num = |s: &str| -> Result<i64, LayoutError> {
        if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
            return Err(err());
        }
        s.parse::<i64>().map_err(|_| err())
    };
    let (date, rest) = match v.find(['T', 't', ' ']) {
        Some(i) => (&v[..i], Some(&v[i + 1..])),
        None => (v, None),
    };
    let mut d = date.splitn(3, '-');
    let (y, m, dd) =
        (num(d.next().ok_or_else(err)?)?, num(d.next().ok_or_else(err)?)?, num(d.next().ok_or_else(err)?)?);
    if !(1..=12).contains(&m) || !(1..=days_in_month(y, m)).contains(&dd) {
        return Err(err());
    }
    let mut ms = days_from_civil(y, m, dd) * 86_400_000;
    if let Some(rest) = rest {
        let (clock, offset_ms) = if let Some(c) = rest.strip_suffix(['Z', 'z']) {
            (c, 0)
        } else if let Some(i) = rest.rfind(['+', '-']) {
            let sign = if &rest[i..=i] == "-" { -1 } else { 1 };
            let (oh, om) = rest[i + 1..].split_once(':').ok_or_else(err)?;
            let (oh, om) = (num(oh)?, num(om)?);
            if oh > 23 || om > 59 {
                return Err(err());
            }
            (&rest[..i], sign * (oh * 3_600_000 + om * 60_000))
        } else {
            return Err(err());
        };
        let (hms, frac) = match clock.split_once('.') {
            Some((a, b)) => (a, Some(b)),
            None => (clock, None),
        };
        let mut t = hms.split(':');
        let (h, mi, s) =
            (num(t.next().ok_or_else(err)?)?, num(t.next().ok_or_else(err)?)?, num(t.next().unwrap_or("0"))?);
        if t.next().is_some() || h > 23 || mi > 59 || s > 59 {
            return Err(err());
        }
        let frac_ms = match frac {
            None => 0,
            Some(f) if !f.is_empty() && f.len() <= 3 => num(f)? * 10i64.pow(3 - f.len() as u32),
            Some(_) => return Err(err()),
        };
        ms += h * 3_600_000 + mi * 60_000 + s * 1000 + frac_ms - offset_ms;
    }
    Ok(ms)
}

/// `YYYY-MM-DDTHH:MM:SS.mmmZ` of a Unix-millisecond instant (proleptic Gregorian, UTC), for
/// messages.
pub fn format_unix_ms(ms: i128) -> String {
    let days = ms.div_euclid(86_400_000) as i64;
    let rem = ms.rem_euclid(86_400_000) as i64;
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3_600_000,
        rem / 60_000 % 60,
        rem / 1000 % 60,
        rem % 1000
    )
}

/// Inverse of [`days_from_civil`].
fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (if m <= 2 { yoe + era * 400 + 1 } else { yoe + era * 400 }, m, d)
}

fn is_leap(y: i64) -> bool {
    (y % 4 == 0 && y % 100 != 0) || y % 400 == 0
}

fn days_in_month(y: i64, m: i64) -> i64 {
    match m {
        2 if is_leap(y) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small deterministic generator (SplitMix64) so the round trips cover many random parts.
    pub(crate) struct Rng(u64);
    impl Rng {
        pub(crate) fn next(&mut self) -> u64 {
            self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        }
    }

    #[test]
    fn named_epochs_match_their_calendar_dates() {
        assert_eq!(parse_epoch("2026-01-01").unwrap(), DEFAULT_EPOCH_MS);
        assert_eq!(
            parse_epoch("2015-01-01T00:00:00Z").unwrap(),
            Layout::by_name("discord").unwrap().epoch_ms
        );
        assert_eq!(parse_epoch("2014-09-01").unwrap(), Layout::by_name("sonyflake").unwrap().epoch_ms);
        assert_eq!(parse_epoch("2025-01-01").unwrap(), Layout::by_name("sonyflake_v2").unwrap().epoch_ms);
        assert_eq!(
            parse_epoch("2016-05-20T00:00:00+08:00").unwrap(),
            Layout::by_name("baidu").unwrap().epoch_ms
        );
        assert_eq!(parse_epoch("2016-11-01").unwrap(), Layout::by_name("shardingsphere").unwrap().epoch_ms);
        assert_eq!(parse_epoch("2023-01-01").unwrap(), Layout::by_name("pgedge").unwrap().epoch_ms);
        assert_eq!(parse_epoch("2010-11-04T01:42:54.657Z").unwrap(), 1_288_834_974_657);
        assert_eq!(parse_epoch("1970-01-01T00:00:00-00:30").unwrap(), 1_800_000);
    }

    #[test]
    fn formats_instants_and_round_trips_the_calendar() {
        assert_eq!(format_unix_ms(DEFAULT_EPOCH_MS as i128), "2026-01-01T00:00:00.000Z");
        assert_eq!(format_unix_ms(1_288_834_974_657), "2010-11-04T01:42:54.657Z");
        assert_eq!(format_unix_ms(-1), "1969-12-31T23:59:59.999Z");
        for days in -800_000..800_000i64 {
            let (y, m, d) = civil_from_days(days);
            assert_eq!(days_from_civil(y, m, d), days);
        }
    }

    #[test]
    fn bad_epochs_are_refused() {
        for bad in [
            "2026-13-01",
            "2026-02-30",
            "2026-01-01T00:00:00",
            "yesterday",
            "2026-01-01T25:00:00Z",
            "2026-1-1x",
        ] {
            assert!(parse_epoch(bad).is_err(), "{bad} accepted");
        }
    }

    #[test]
    fn every_named_layout_adds_up() {
        for name in NAMED_LAYOUTS {
            let l = Layout::by_name(name).unwrap();
            let total = l.time_bits + l.worker_bits + l.sequence_bits;
            if *name == "discord" {
                assert_eq!(total, 64);
                assert!(l.validate().is_err(), "discord must be decode-only");
            } else if *name == "instagram" {
                assert_eq!(total, 64);
                l.validate().unwrap();
            } else if *name == "js53" {
                assert_eq!(total, 53);
                l.validate().unwrap();
            } else {
                assert_eq!(total, 63, "{name}");
                l.validate().unwrap();
            }
        }
    }

    #[test]
    fn custom_specs_parse_and_validate() {
        let l =
            Layout::parse("time=29, worker=21, sequence=13, unit_ms=1000, epoch=2016-09-20T00:00:00+08:00")
                .unwrap();
        assert_eq!((l.time_bits, l.worker_bits, l.sequence_bits, l.unit_ms), (29, 21, 13, 1000));
        assert_eq!(l.epoch_ms, 1_474_300_800_000);
        assert_eq!(Layout::parse(&l.canonical()).unwrap().canonical(), l.canonical());
        assert_eq!(Layout::parse("TWITTER").unwrap().name, "twitter");
        assert!(matches!(
            Layout::parse("time=41,worker=10,sequence=13"),
            Err(LayoutError::Widths { total: 64, .. })
        ));
        assert!(matches!(
            Layout::parse("time=42,worker=10,sequence=13"),
            Err(LayoutError::Widths { total: 65, .. })
        ));
        assert_eq!(Layout::parse("time=41,worker=10,sequence=11").unwrap().total_bits(), 62);
        assert!(matches!(Layout::parse("time=41,worker=0,sequence=22"), Err(LayoutError::Widths { .. })));
        assert!(matches!(Layout::parse("time=20,worker=32,sequence=11"), Err(LayoutError::Widths { .. })));
        assert!(matches!(Layout::parse("time=19,worker=22,sequence=22"), Err(LayoutError::Widths { .. })));
        assert!(matches!(
            Layout::parse("time=41,worker=10,sequence=12,unit_ms=0"),
            Err(LayoutError::Unit(0))
        ));
        assert!(matches!(Layout::parse("time=41,worker=10"), Err(LayoutError::Syntax(_))));
        assert!(matches!(
            Layout::parse("time=41,worker=10,sequence=12,colour=blue"),
            Err(LayoutError::Syntax(_))
        ));
        assert!(matches!(Layout::parse("nope"), Err(LayoutError::UnknownLayout(_))));
        assert!(Layout::parse("discord").is_ok(), "by name it parses; generating is refused by validate");
        assert!(Layout::parse("discord").unwrap().validate().is_err());
    }

    #[test]
    fn round_trip_every_layout_over_random_parts() {
        let mut rng = Rng(42);
        let mut layouts: Vec<Layout> = NAMED_LAYOUTS.iter().map(|n| Layout::by_name(n).unwrap()).collect();
        layouts.push(Layout::parse("time=29,worker=21,sequence=13,unit_ms=1000").unwrap());
        layouts.push(Layout::parse("time=45,worker=2,sequence=16,order=sequence_worker").unwrap());
        layouts.push(Layout::parse("time=20,worker=31,sequence=12").unwrap());
        for l in &layouts {
            for i in 0..20_000u64 {
                let p = Parts {
                    time: rng.next() & l.max_time(),
                    worker: rng.next() & l.max_worker(),
                    sequence: rng.next() & l.max_sequence(),
                };
                // also the extremes
                let p = match i {
                    0 => Parts { time: 0, worker: 0, sequence: 0 },
                    1 => Parts { time: l.max_time(), worker: l.max_worker(), sequence: l.max_sequence() },
                    _ => p,
                };
                let id = l.encode(p).unwrap();
                assert!(id >= 0, "{}: negative id", l.name);
                assert_eq!(l.decode(id).unwrap(), p, "{} id {id}", l.name);
            }
        }
    }

    #[test]
    fn ids_order_by_time_then_the_upper_field() {
        let l = Layout::by_name("sonyflake").unwrap();
        let a = l.encode(Parts { time: 5, worker: 65535, sequence: 0 }).unwrap();
        let b = l.encode(Parts { time: 5, worker: 0, sequence: 1 }).unwrap();
        assert!(a < b, "sonyflake's sequence sits above the machine id");
        let d = Layout::by_name("default").unwrap();
        let a = d.encode(Parts { time: 5, worker: 1, sequence: 4095 }).unwrap();
        let b = d.encode(Parts { time: 6, worker: 0, sequence: 0 }).unwrap();
        assert!(a < b);
    }

    #[test]
    fn out_of_range_parts_and_ids_are_refused() {
        let d = Layout::by_name("default").unwrap();
        assert!(matches!(
            d.encode(Parts { time: 1 << 41, worker: 0, sequence: 0 }),
            Err(IdError::TimeOutOfRange { .. })
        ));
        assert!(matches!(
            d.encode(Parts { time: 0, worker: 1024, sequence: 0 }),
            Err(IdError::WorkerOutOfRange { .. })
        ));
        assert!(matches!(
            d.encode(Parts { time: 0, worker: 0, sequence: 4096 }),
            Err(IdError::SequenceOutOfRange { .. })
        ));
        assert!(matches!(d.decode(-1), Err(IdError::Negative(-1))));
        assert!(d.checked_tick(DEFAULT_EPOCH_MS - 1).is_err());
        assert_eq!(d.checked_tick(DEFAULT_EPOCH_MS).unwrap(), 0);
        let discord = Layout::by_name("discord").unwrap();
        assert!(discord.decode(-1).is_err());
        assert_eq!(discord.max_time(), (1 << 41) - 1);
        assert!(discord.encode(Parts { time: 1 << 41, worker: 0, sequence: 0 }).is_err());
    }

    #[test]
    fn known_answers_from_the_peers_docs() {
        // Discord's documentation: 175928847299117063 → 2016-04-30 11:18:25.796 UTC,
        // worker 1, process 0, increment 7.
        let d = Layout::by_name("discord").unwrap();
        let p = d.decode(175_928_847_299_117_063).unwrap();
        assert_eq!(format_unix_ms(d.tick_to_unix_ms(p.time)), "2016-04-30T11:18:25.796Z");
        assert_eq!(d.split_worker(p.worker), Some((1, 0)));
        assert_eq!(p.sequence, 7);
        assert_eq!(d.encode(p).unwrap(), 175_928_847_299_117_063);
        // Instagram's engineering blog: ms 1387263000 since its epoch, shard 1341, sequence 905.
        let i = Layout::by_name("instagram").unwrap();
        let p = i.decode(11_637_205_501_278_089).unwrap();
        assert_eq!((p.time, p.worker, p.sequence), (1_387_263_000, 1341, 905));
        assert_eq!(format_unix_ms(i.tick_to_unix_ms(p.time)), "2011-09-09T22:28:04.721Z");
        // pgEdge's documentation: get_epoch(136169504773242881) = 1704996539.845
        let e = Layout::by_name("pgedge").unwrap();
        let p = e.decode(136_169_504_773_242_881).unwrap();
        assert_eq!(e.tick_to_unix_ms(p.time), 1_704_996_539_845);
        // A Baidu uid-generator configuration: 29 s / 21 worker / 13 sequence, epoch
        // 2016-09-20 (+08:00): seconds, not milliseconds.
        let b = Layout::registered(
            "baidu_29_21_13",
            parse_epoch("2016-09-20T00:00:00+08:00").unwrap(),
            1000,
            29,
            21,
            13,
            FieldOrder::WorkerAboveSequence,
            None,
        )
        .unwrap();
        let id = b.encode(Parts { time: 100_000_000, worker: 2_000_000, sequence: 8191 }).unwrap();
        assert_eq!(id, (100_000_000i64 << 34) | (2_000_000 << 13) | 8191);
        assert_eq!(format_unix_ms(b.tick_to_unix_ms(100_000_000)), "2019-11-21T01:46:40.000Z");
    }

    #[test]
    fn registered_layouts_are_validated() {
        let ok = |t, w, s| Layout::registered("x", 0, 1, t, w, s, FieldOrder::WorkerAboveSequence, None);
        assert!(ok(41, 10, 12).is_ok());
        assert!(ok(42, 10, 12).unwrap().decode_only);
        assert!(!ok(41, 10, 11).unwrap().decode_only, "62 bits: a narrower layout");
        assert!(ok(43, 10, 12).is_err());
        assert!(ok(19, 22, 22).is_err());
        assert!(ok(20, 32, 11).is_err());
        assert!(Layout::registered("x", 0, 0, 41, 10, 12, FieldOrder::WorkerAboveSequence, None).is_err());
        assert!(Layout::registered("x", 0, 1, 41, 10, 12, FieldOrder::WorkerAboveSequence, Some(10)).is_err());
        let s = Layout::registered("x", 0, 1, 41, 10, 12, FieldOrder::WorkerAboveSequence, Some(4)).unwrap();
        assert_eq!(s.split_worker(0b11_1111_0101), Some((0b11_1111, 0b0101)));
    }

    #[test]
    fn js53_is_the_published_spec() {
        let l = Layout::by_name("js53").unwrap();
        assert_eq!((l.time_bits, l.worker_bits, l.sequence_bits, l.unit_ms), (37, 6, 10, 10));
        assert_eq!(l.epoch_ms, parse_epoch("2026-01-01T00:00:00Z").unwrap());
        assert_eq!(l.order, FieldOrder::WorkerAboveSequence);
        assert_eq!((l.max_worker(), l.max_sequence()), (63, 1023));
        assert_eq!(l.max_id(), JS_MAX_SAFE_INTEGER);
        assert_eq!(l.max_id(), 9_007_199_254_740_991);
        // 2^37 ticks of 10 ms after 2026-01-01: the field ends in July 2069.
        assert_eq!(format_unix_ms(l.time_field_end_ms()), "2069-07-21T06:52:14.720Z");
        assert_eq!(Layout::parse("JS53").unwrap(), l);
        assert_eq!(Layout::parse(&l.canonical()).unwrap().canonical(), l.canonical());
        // 1,024 ids per 10 ms per worker: 102,400 ids/s.
        assert_eq!((l.max_sequence() + 1) * 1000 / l.unit_ms as u64, 102_400);
        // sequence_start = vibrate: 16 start values (docs/snowflake-ids.md: id % 2^n balanced for n <= 4)
        assert_eq!(crate::generator::spread(l.sequence_bits), 16);
    }

    #[test]
    fn every_js53_id_is_a_safe_javascript_integer() {
        let l = Layout::by_name("js53").unwrap();
        let top = Parts { time: l.max_time(), worker: l.max_worker(), sequence: l.max_sequence() };
        assert_eq!(l.encode(top).unwrap(), JS_MAX_SAFE_INTEGER, "the largest id of the lifetime");
        assert_eq!(l.decode(JS_MAX_SAFE_INTEGER).unwrap(), top);
        let mut rng = Rng(53);
        for _ in 0..200_000 {
            let p = Parts {
                time: rng.next() & l.max_time(),
                worker: rng.next() & l.max_worker(),
                sequence: rng.next() & l.max_sequence(),
            };
            let id = l.encode(p).unwrap();
            assert!((0..=JS_MAX_SAFE_INTEGER).contains(&id), "{id}");
            // exactly representable as a double, as JSON.parse would read it
            assert_eq!(id as f64 as i64, id);
            assert_eq!(l.decode(id).unwrap(), p);
        }
        // time order: a later tick is a larger id, whatever the worker and sequence
        let a = l.encode(Parts { time: 7, worker: 63, sequence: 1023 }).unwrap();
        let b = l.encode(Parts { time: 8, worker: 0, sequence: 0 }).unwrap();
        assert!(a < b);
        // worker above sequence
        assert_eq!(l.encode(Parts { time: 0, worker: 1, sequence: 0 }).unwrap(), 1024);
    }

    #[test]
    fn js53_refuses_everything_beyond_its_field() {
        let l = Layout::by_name("js53").unwrap();
        // one tick past the end of the time field, worker 64, sequence 1024
        assert!(matches!(
            l.encode(Parts { time: l.max_time() + 1, worker: 0, sequence: 0 }),
            Err(IdError::TimeOutOfRange { .. })
        ));
        assert!(matches!(
            l.encode(Parts { time: 0, worker: 64, sequence: 0 }),
            Err(IdError::WorkerOutOfRange { .. })
        ));
        assert!(matches!(
            l.encode(Parts { time: 0, worker: 0, sequence: 1024 }),
            Err(IdError::SequenceOutOfRange { .. })
        ));
        // ids above 2^53 − 1 are not ids of the layout
        assert_eq!(l.decode(JS_MAX_SAFE_INTEGER + 1), Err(IdError::TooWide(JS_MAX_SAFE_INTEGER + 1)));
        assert_eq!(l.decode(i64::MAX), Err(IdError::TooWide(i64::MAX)));
        // instants: the last 10 ms tick is in the field, the end is not
        let end = l.time_field_end_ms() as i64;
        assert_eq!(l.checked_tick(end - 1).unwrap(), l.max_time());
        assert!(matches!(l.checked_tick(end), Err(IdError::TimeOutOfRange { .. })));
        assert!(matches!(l.checked_tick(l.epoch_ms - 1), Err(IdError::TimeOutOfRange { .. })));
    }

    #[test]
    fn narrow_layouts_generate_and_register() {
        // fewer than 63 bits: accepted for generation and for registration, top bits zero
        let l = Layout::parse("time=30,worker=4,sequence=8,unit_ms=10,epoch=2026-01-01").unwrap();
        assert_eq!(l.total_bits(), 42);
        assert_eq!(l.max_id(), (1 << 42) - 1);
        l.validate().unwrap();
        let top = Parts { time: l.max_time(), worker: l.max_worker(), sequence: l.max_sequence() };
        assert_eq!(l.encode(top).unwrap(), (1 << 42) - 1);
        assert!(matches!(l.decode(1 << 42), Err(IdError::TooWide(_))));
        let r = Layout::registered("n", 0, 1, 20, 1, 1, FieldOrder::SequenceAboveWorker, None).unwrap();
        assert!(!r.decode_only);
        assert_eq!(r.max_id(), (1 << 22) - 1);
        r.validate().unwrap();
        // the smallest layout: 20 + 1 + 1 bits; below that, refused
        assert!(Layout::parse("time=19,worker=1,sequence=1").is_err());
        assert!(Layout::parse("time=20,worker=0,sequence=1").is_err());
        // absurd widths are refused, never overflow
        assert!(matches!(
            Layout::parse("time=4294967295,worker=4294967295,sequence=1"),
            Err(LayoutError::Widths { total: u32::MAX, .. })
        ));
    }

    #[test]
    fn split_worker_fields() {
        let t = Layout::by_name("twitter").unwrap();
        assert_eq!(t.split_worker(0b10_1010_0011), Some((21, 3)));
        assert_eq!(Layout::by_name("default").unwrap().split_worker(7), None);
    }
}
