//! Short text codes for ids (URLs, support calls): Crockford base32, optionally with its check
//! symbol, and base62. Encoding is canonical (no leading zeros; `0` is `"0"`); decoding is
//! strict: every character is checked and the first bad one is reported with its position.
//!
//! * `crockford`: alphabet `0123456789ABCDEFGHJKMNPQRSTVWXYZ` (no I, L, O, U). Decoding is
//!   case-insensitive, reads `I`/`L` as 1 and `O` as 0, and ignores hyphens (Crockford's spec
//!   allows them for readability). Encoding writes upper case, no hyphens.
//! * `crockford_check`: the same, followed by one check symbol: the value modulo 37, written
//!   with the 32 symbols then `*~$=U`. A mistyped or swapped symbol is detected.
//! * `base62`: alphabet `0-9A-Za-z` (GMP's order), case-sensitive, nothing ignored.
//!
//! Codes cover `0 ..= 2^63 - 1`: 13 Crockford symbols, 11 base62 symbols at most.

/// A text code format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Crockford { check: bool },
    Base62,
}

/// Every format name [`Format::parse`] accepts.
pub const FORMATS: [&str; 3] = ["crockford", "crockford_check", "base62"];

impl Format {
    /// A format by name (case-insensitive).
    pub fn parse(name: &str) -> Option<Format> {
        // no allocation: this runs on every uid_to_text()/uid_from_text() call
        let name = name.trim();
        [Format::Crockford { check: false }, Format::Crockford { check: true }, Format::Base62]
            .into_iter()
            .find(|f| f.name().eq_ignore_ascii_case(name))
    }

    pub fn name(&self) -> &'static str {
        match self {
            Format::Crockford { check: false } => "crockford",
            Format::Crockford { check: true } => "crockford_check",
            Format::Base62 => "base62",
        }
    }

    fn radix(&self) -> u64 {
        match self {
            Format::Crockford { .. } => 32,
            Format::Base62 => 62,
        }
    }
}

const CROCKFORD: &[u8; 32] = b"0123456789ABCDEFGHJKMNPQRSTVWXYZ";
const CROCKFORD_CHECK: &[u8; 37] = b"0123456789ABCDEFGHJKMNPQRSTVWXYZ*~$=U";
const BASE62: &[u8; 62] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/// Why a code does not decode (or a value does not encode).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CodeError {
    /// No symbols at all (or, with a check symbol, nothing before it).
    Empty { format: Format },
    /// A character that is not a symbol of the format, at a 1-based character position.
    InvalidChar { format: Format, position: usize, ch: char },
    /// The check symbol does not match the value.
    CheckMismatch { position: usize, found: char, expected: char },
    /// The value is above 2^63 - 1.
    Overflow { format: Format },
    /// Only non-negative ids have codes.
    Negative(i64),
    /// Longer than [`MAX_CODE_BYTES`]: refused before it is read (a code is 11 to 15 symbols).
    TooLong { len: usize },
}

/// The longest text [`decode`] reads, in bytes: room for any code with hyphens between its
/// symbols, and a bound on the work and memory a caller's string can cost.
pub const MAX_CODE_BYTES: usize = 256;

impl std::fmt::Display for CodeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CodeError::Empty { format: Format::Crockford { check: true } } => {
                write!(f, "a crockford_check code needs at least one symbol and its check symbol")
            }
            CodeError::Empty { format } => write!(f, "a {} code needs at least one symbol", format.name()),
            CodeError::InvalidChar { format, position, ch } => write!(
                f,
                "invalid character {:?} at position {position} of a {} code",
                ch,
                format.name()
            ),
            CodeError::CheckMismatch { position, found, expected } => write!(
                f,
                "check symbol '{found}' at position {position} does not match the code (expected '{expected}')"
            ),
            CodeError::Overflow { format } => {
                write!(f, "{} code is out of range for bigint (above 2^63-1)", format.name())
            }
            CodeError::Negative(v) => write!(f, "{v} is negative; only ids 0 .. 2^63-1 have text codes"),
            CodeError::TooLong { len } => {
                write!(f, "a code of {len} bytes is too long (at most {MAX_CODE_BYTES})")
            }
        }
    }
}

impl std::error::Error for CodeError {}

/// The code of a non-negative id.
pub fn encode(id: i64, format: Format) -> Result<String, CodeError> {
    if id < 0 {
        return Err(CodeError::Negative(id));
    }
    let radix = format.radix();
    let alphabet: &[u8] = match format {
        Format::Crockford { .. } => CROCKFORD,
        Format::Base62 => BASE62,
    };
    let mut v = id as u64;
    let mut buf = [0u8; 14];
    let mut i = buf.len();
    if let Format::Crockford { check: true } = format {
        i -= 1;
        buf[i] = CROCKFORD_CHECK[(v % 37) as usize];
    }
    loop {
        i -= 1;
        buf[i] = alphabet[(v % radix) as usize];
        v /= radix;
        if v == 0 {
            break;
        }
    }
    Ok(String::from_utf8(buf[i..].to_vec()).expect("ASCII"))
}

/// The value of one Crockford symbol, with the aliases; `None` if it is not one.
fn crockford_value(c: char) -> Option<u64> {
    let u = c.to_ascii_uppercase();
    let u = match u {
        'I' | 'L' => '1',
        'O' => '0',
        _ => u,
    };
    CROCKFORD.iter().position(|&s| s as char == u).map(|p| p as u64)
}

fn crockford_check_value(c: char) -> Option<u64> {
    crockford_value(c).or_else(|| {
        let u = c.to_ascii_uppercase();
        CROCKFORD_CHECK[32..].iter().position(|&s| s as char == u).map(|p| 32 + p as u64)
    })
}

fn base62_value(c: char) -> Option<u64> {
    BASE62.iter().position(|&s| s as char == c).map(|p| p as u64)
}

/// The id a code stands for. Syntax is checked first (the first bad character is reported),
/// then the range, then the check symbol.
pub fn decode(code: &str, format: Format) -> Result<i64, CodeError> {
    if code.len() > MAX_CODE_BYTES {
        return Err(CodeError::TooLong { len: code.len() });
    }
    // (position, value) of every symbol
    let mut symbols: Vec<(usize, char, u64)> = Vec::with_capacity(code.len());
    let check = matches!(format, Format::Crockford { check: true });
    let chars: Vec<char> = code.chars().collect();
    let last_symbol = chars.iter().rposition(|&c| !(matches!(format, Format::Crockford { .. }) && c == '-'));
    for (i, &c) in chars.iter().enumerate() {
        let v = match format {
            Format::Crockford { .. } if c == '-' => continue,
            Format::Crockford { .. } if check && Some(i) == last_symbol => crockford_check_value(c),
            Format::Crockford { .. } => crockford_value(c),
            Format::Base62 => base62_value(c),
        };
        match v {
            Some(v) => symbols.push((i + 1, c, v)),
            None => return Err(CodeError::InvalidChar { format, position: i + 1, ch: c }),
        }
    }
    let check_symbol = if check { symbols.pop() } else { None };
    if symbols.is_empty() {
        return Err(CodeError::Empty { format });
    }
    let radix = format.radix();
    let mut value: u64 = 0;
    for &(_, _, v) in &symbols {
        value = value
            .checked_mul(radix)
            .and_then(|x| x.checked_add(v))
            .filter(|&x| x <= i64::MAX as u64)
            .ok_or(CodeError::Overflow { format })?;
    }
    if let Some((position, found, v)) = check_symbol {
        if v != value % 37 {
            return Err(CodeError::CheckMismatch {
                position,
                found,
                expected: CROCKFORD_CHECK[(value % 37) as usize] as char,
            });
        }
    }
    Ok(value as i64)
}

#[cfg(test)]
mod tests {

    #[test]
    fn a_long_string_is_refused_before_it_is_read() {
        let long = "-".repeat(MAX_CODE_BYTES) + "1";
        assert_eq!(decode(&long, Format::Crockford { check: false }), Err(CodeError::TooLong { len: 257 }));
        let ok = "-".repeat(MAX_CODE_BYTES - 1) + "1";
        assert_eq!(decode(&ok, Format::Crockford { check: false }), Ok(1));
    }

    use super::*;

    const C: Format = Format::Crockford { check: false };
    const CC: Format = Format::Crockford { check: true };
    const B: Format = Format::Base62;

    #[test]
    fn known_values() {
        assert_eq!(encode(0, C).unwrap(), "0");
        assert_eq!(encode(31, C).unwrap(), "Z");
        assert_eq!(encode(32, C).unwrap(), "10");
        assert_eq!(encode(1234, C).unwrap(), "16J");
        assert_eq!(encode(i64::MAX, C).unwrap(), "7ZZZZZZZZZZZZ");
        assert_eq!(encode(0, CC).unwrap(), "00");
        assert_eq!(encode(1234, CC).unwrap(), "16JD"); // 1234 mod 37 = 13 = 'D'
        assert_eq!(encode(36, CC).unwrap(), "14U");
        assert_eq!(encode(32, CC).unwrap(), "10*");
        assert_eq!(encode(0, B).unwrap(), "0");
        assert_eq!(encode(61, B).unwrap(), "z");
        assert_eq!(encode(62, B).unwrap(), "10");
        assert_eq!(encode(i64::MAX, B).unwrap(), "AzL8n0Y58m7");
        assert_eq!(encode(-1, C), Err(CodeError::Negative(-1)));
        assert_eq!(encode(i64::MIN, B), Err(CodeError::Negative(i64::MIN)));
    }

    #[test]
    fn round_trips() {
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut ids: Vec<i64> = (0..2000).chain([i64::MAX, i64::MAX - 1, 1 << 62, (1 << 60) - 1]).collect();
        for _ in 0..20_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            ids.push((x >> 1) as i64);
        }
        for f in [C, CC, B] {
            for &id in &ids {
                let s = encode(id, f).unwrap();
                assert_eq!(decode(&s, f), Ok(id), "{s} ({f:?})");
                assert!(
                    s.len()
                        <= if f == B {
                            11
                        } else if f == CC {
                            14
                        } else {
                            13
                        }
                );
            }
        }
    }

    #[test]
    fn crockford_reading_rules() {
        assert_eq!(decode("16j", C), Ok(1234));
        assert_eq!(decode("16J", C), Ok(1234));
        assert_eq!(decode("iI", C), decode("11", C));
        assert_eq!(decode("lL", C), Ok(33));
        assert_eq!(decode("oO1", C), Ok(1));
        assert_eq!(decode("1-6-J", C), Ok(1234));
        assert_eq!(decode("00016J", C), Ok(1234), "leading zeros are accepted");
        assert_eq!(decode("16jd", CC), Ok(1234));
        assert_eq!(decode("14u", CC), Ok(36));
        assert_eq!(decode("10*", CC), Ok(32));
        assert_eq!(decode("16J-D", CC), Ok(1234));
        assert_eq!(decode("0o", CC), Ok(0), "o is 0 in the check position too");
    }

    #[test]
    fn every_bad_character_is_reported_with_its_position() {
        for bad in ['U', 'u', '*', '~', '$', '=', ' ', '_', '!', 'é', '+', '.'] {
            for pos in 0..5 {
                let mut s: Vec<char> = "ABCDE".chars().collect();
                s[pos] = bad;
                let s: String = s.into_iter().collect();
                assert_eq!(
                    decode(&s, C),
                    Err(CodeError::InvalidChar { format: C, position: pos + 1, ch: bad }),
                    "{s:?}"
                );
            }
        }
        // the check alphabet is allowed only in the last position
        assert_eq!(decode("1U2", CC), Err(CodeError::InvalidChar { format: CC, position: 2, ch: 'U' }));
        assert_eq!(
            decode("1*-", CC),
            Err(CodeError::CheckMismatch { position: 2, found: '*', expected: '1' })
        );
        assert_eq!(decode("*", CC), Err(CodeError::Empty { format: CC }), "a check symbol alone");
        // positions count characters, not bytes
        assert_eq!(decode("éé1x", C), Err(CodeError::InvalidChar { format: C, position: 1, ch: 'é' }));
        assert_eq!(decode("1ü", B), Err(CodeError::InvalidChar { format: B, position: 2, ch: 'ü' }));
        for bad in ['-', ' ', '+', '/', '_', '='] {
            assert_eq!(
                decode(&format!("ab{bad}"), B),
                Err(CodeError::InvalidChar { format: B, position: 3, ch: bad })
            );
        }
        // the first bad character wins, even after an overflowing prefix
        assert_eq!(
            decode("ZZZZZZZZZZZZZZZZ!", C),
            Err(CodeError::InvalidChar { format: C, position: 17, ch: '!' })
        );
    }

    #[test]
    fn empty_overflow_and_check() {
        assert_eq!(decode("", C), Err(CodeError::Empty { format: C }));
        assert_eq!(decode("---", C), Err(CodeError::Empty { format: C }));
        assert_eq!(decode("", B), Err(CodeError::Empty { format: B }));
        assert_eq!(decode("7", CC), Err(CodeError::Empty { format: CC }));
        assert_eq!(decode("7ZZZZZZZZZZZZ", C), Ok(i64::MAX));
        assert_eq!(decode("80000000000000", C), Err(CodeError::Overflow { format: C }));
        assert_eq!(decode("80000000000000".trim_end_matches('0'), C), Ok(8));
        assert_eq!(decode("8000000000000", C), Err(CodeError::Overflow { format: C }));
        assert_eq!(decode("ZZZZZZZZZZZZZZZZZZZZ", C), Err(CodeError::Overflow { format: C }));
        assert_eq!(decode("AzL8n0Y58m7", B), Ok(i64::MAX));
        assert_eq!(decode("AzL8n0Y58m8", B), Err(CodeError::Overflow { format: B }));
        assert_eq!(decode("zzzzzzzzzzz", B), Err(CodeError::Overflow { format: B }));
        assert_eq!(
            decode("16JE", CC),
            Err(CodeError::CheckMismatch { position: 4, found: 'E', expected: 'D' })
        );
        // a swapped pair of symbols is caught by the check symbol
        assert!(matches!(decode("61JD", CC), Err(CodeError::CheckMismatch { .. })));
        let ok = encode(987_654_321_012, CC).unwrap();
        let mut caught = 0;
        for i in 0..ok.len() - 1 {
            let mut s: Vec<char> = ok.chars().collect();
            s[i] = if s[i] == '7' { '8' } else { '7' };
            if decode(&s.iter().collect::<String>(), CC).is_err() {
                caught += 1;
            }
        }
        assert_eq!(caught, ok.len() - 1, "every single-symbol error is caught");
    }

    #[test]
    fn format_names() {
        assert_eq!(Format::parse("Crockford"), Some(C));
        assert_eq!(Format::parse("crockford_check"), Some(CC));
        assert_eq!(Format::parse("base62"), Some(B));
        assert_eq!(Format::parse("base64"), None);
        for n in FORMATS {
            assert_eq!(Format::parse(n).unwrap().name(), n);
        }
    }
}
