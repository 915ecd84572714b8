//! The snowflake generator's durable state file (`$PGDATA/pg_idgen/snowflake.state`): its text
//! format, checked strictly when read.
//!
//! ```text
//! pg_idgen snowflake state 2
//! layout time=41,worker=10,sequence=12,unit_ms=1,epoch=1767225600000
//! floor 1767225600000
//! worker 1 1795000000000
//! worker 7 1795000001000
//! crc32c 1a2b3c4d
//! ```
//!
//! Each `worker` line holds a worker id and the Unix ms below which its ids may have been issued;
//! `floor` is the same bound for every worker id without a line of its own. The last line is the
//! CRC-32C of everything before it, so a truncated or edited file is refused instead of silently
//! restarting ids lower. Version 1 files (no floor, no checksum, written by pg_idgen 0.1) are
//! still read.

use std::collections::HashSet;
use std::fmt;

const HEADER_V1: &str = "pg_idgen snowflake state 1";
const HEADER_V2: &str = "pg_idgen snowflake state 2";

/// The content of a state file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StateFile {
    /// Canonical text of the layout the state was made with.
    pub layout: String,
    /// Unix ms below which ids of worker ids without a line may have been issued.
    pub floor_ms: i64,
    /// (worker id, Unix ms below which its ids may have been issued), one per worker id.
    pub workers: Vec<(i64, i64)>,
}

/// Why a state file was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StateFileError {
    UnknownHeader,
    MissingLayout,
    MissingFloor,
    BadLine { line: usize, text: String },
    DuplicateWorker(i64),
    MissingChecksum,
    ChecksumMismatch { stored: u32, computed: u32 },
    TrailingText,
}

impl fmt::Display for StateFileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StateFileError::UnknownHeader => write!(f, "unknown header (expected \"{HEADER_V2}\")"),
            StateFileError::MissingLayout => write!(f, "missing layout line"),
            StateFileError::MissingFloor => write!(f, "missing floor line"),
            StateFileError::BadLine { line, text } => write!(f, "line {line} is invalid: \"{text}\""),
            StateFileError::DuplicateWorker(w) => write!(f, "worker id {w} appears twice"),
            StateFileError::MissingChecksum => write!(f, "the checksum line is missing (file truncated?)"),
            StateFileError::ChecksumMismatch { stored, computed } => {
                write!(f, "checksum mismatch (stored {stored:08x}, computed {computed:08x})")
            }
            StateFileError::TrailingText => write!(f, "text after the checksum line"),
        }
    }
}

impl StateFile {
    /// The file's text, checksum included.
    pub fn render(&self) -> String {
        let mut text = format!("{HEADER_V2}\nlayout {}\nfloor {}\n", self.layout, self.floor_ms);
        for (w, ms) in &self.workers {
            text.push_str(&format!("worker {w} {ms}\n"));
        }
        let crc = crc32c::crc32c(text.as_bytes());
        text.push_str(&format!("crc32c {crc:08x}\n"));
        text
    }

    /// Reads a file's text, refusing anything `render` (or version 1) would not have written.
    pub fn parse(text: &str) -> Result<StateFile, StateFileError> {
        let first = text.lines().next().unwrap_or_default();
        let v2 = match first {
            HEADER_V2 => true,
            HEADER_V1 => false,
            _ => return Err(StateFileError::UnknownHeader),
        };
        let body = if v2 {
            let at = text.rfind("crc32c ").ok_or(StateFileError::MissingChecksum)?;
            let (body, tail) = text.split_at(at);
            if !body.ends_with('\n') {
                return Err(StateFileError::MissingChecksum);
            }
            let line = tail.strip_suffix('\n').ok_or(StateFileError::MissingChecksum)?;
            if line.contains('\n') {
                return Err(StateFileError::TrailingText);
            }
            let hex = &line["crc32c ".len()..];
            let stored = (hex.len() == 8)
                .then(|| u32::from_str_radix(hex, 16).ok())
                .flatten()
                .ok_or(StateFileError::MissingChecksum)?;
            let computed = crc32c::crc32c(body.as_bytes());
            if stored != computed {
                return Err(StateFileError::ChecksumMismatch { stored, computed });
            }
            body
        } else {
            text
        };
        let mut lines = body.lines().enumerate().skip(1);
        let layout = lines
            .next()
            .and_then(|(_, l)| l.strip_prefix("layout "))
            .filter(|l| !l.is_empty())
            .ok_or(StateFileError::MissingLayout)?
            .to_string();
        let floor_ms = if v2 {
            let (n, l) = lines.next().ok_or(StateFileError::MissingFloor)?;
            let v = l.strip_prefix("floor ").ok_or(StateFileError::MissingFloor)?;
            v.parse::<i64>().map_err(|_| StateFileError::BadLine { line: n + 1, text: l.to_string() })?
        } else {
            i64::MIN
        };
        let mut workers = Vec::new();
        let mut seen = HashSet::new();
        for (n, line) in lines {
            if !v2 && line.trim().is_empty() {
                continue;
            }
            let bad = || StateFileError::BadLine { line: n + 1, text: line.to_string() };
            let mut f = line.split(' ');
            let (w, ms) = match (f.next(), f.next(), f.next(), f.next()) {
                (Some("worker"), Some(w), Some(ms), None) => {
                    (w.parse::<i64>().map_err(|_| bad())?, ms.parse::<i64>().map_err(|_| bad())?)
                }
                _ => return Err(bad()),
            };
            if w < 0 {
                return Err(bad());
            }
            if !seen.insert(w) {
                return Err(StateFileError::DuplicateWorker(w));
            }
            workers.push((w, ms));
        }
        Ok(StateFile { layout, floor_ms, workers })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> StateFile {
        StateFile {
            layout: "time=41,worker=10,sequence=12,unit_ms=1,epoch=1767225600000".into(),
            floor_ms: 1_767_225_600_000,
            workers: vec![(1, 1_795_000_000_000), (7, 1_795_000_001_000)],
        }
    }

    #[test]
    fn round_trip() {
        let s = sample();
        assert_eq!(StateFile::parse(&s.render()), Ok(s));
        let empty = StateFile { workers: vec![], ..sample() };
        assert_eq!(StateFile::parse(&empty.render()), Ok(empty));
    }

    #[test]
    fn every_truncation_is_refused() {
        let text = sample().render();
        for cut in 0..text.len() {
            assert!(StateFile::parse(&text[..cut]).is_err(), "accepted a file cut at byte {cut}");
        }
    }

    #[test]
    fn every_changed_digit_is_refused() {
        let text = sample().render();
        let body_start = text.find('\n').unwrap() + 1; // a changed header is an unknown version
        let body_end = text.rfind("crc32c").unwrap();
        for (i, c) in text[..body_end].char_indices().filter(|(i, c)| *i >= body_start && c.is_ascii_digit())
        {
            let mut changed = text.clone();
            let d = if c == '9' { '0' } else { (c as u8 + 1) as char };
            changed.replace_range(i..i + 1, &d.to_string());
            assert!(
                matches!(StateFile::parse(&changed), Err(StateFileError::ChecksumMismatch { .. })),
                "accepted a change at byte {i}"
            );
        }
    }

    #[test]
    fn duplicate_and_missing_lines_are_refused() {
        // A hand-made file with a valid checksum but a duplicated worker line.
        let mut body = format!("{HEADER_V2}\nlayout default\nfloor 0\nworker 1 5\nworker 1 6\n");
        body.push_str(&format!("crc32c {:08x}\n", crc32c::crc32c(body.as_bytes())));
        assert_eq!(StateFile::parse(&body), Err(StateFileError::DuplicateWorker(1)));
        let mut nofloor = format!("{HEADER_V2}\nlayout default\nworker 1 5\n");
        nofloor.push_str(&format!("crc32c {:08x}\n", crc32c::crc32c(nofloor.as_bytes())));
        assert_eq!(StateFile::parse(&nofloor), Err(StateFileError::MissingFloor));
        let mut extra = sample().render();
        extra.push_str("worker 9 9\n");
        assert_eq!(StateFile::parse(&extra), Err(StateFileError::TrailingText));
    }

    #[test]
    fn version_1_files_are_read() {
        let v1 = format!("{HEADER_V1}\nlayout default\nworker 3 1700000000000\nworker 4 5\n");
        let s = StateFile::parse(&v1).unwrap();
        assert_eq!(s.workers, vec![(3, 1_700_000_000_000), (4, 5)]);
        assert_eq!(s.floor_ms, i64::MIN);
        assert!(StateFile::parse(&format!("{HEADER_V1}\nlayout default\nworker 3 x\n")).is_err());
        assert!(StateFile::parse(&format!("{HEADER_V1}\nlayout default\nworker 3 1\nworker 3 2\n")).is_err());
    }
}
