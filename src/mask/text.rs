//! Text codes: `uid_to_text`/`uid_from_text` (Crockford base32, base62) and the masked, versioned
//! codes `uid_mask_text`/`uid_unmask_text`.

use pg_idgen_core::codes::{self, CodeError, Format, FORMATS};
use pgrx::prelude::*;

use super::keys::{mask_error, ring, TEXT_VERSION_MODULUS};
use crate::errors::{raise, raise_full, Code};

pub(super) fn format_arg(name: &str) -> Format {
    Format::parse(name).unwrap_or_else(|| {
        raise(
            Code::ERRCODE_INVALID_PARAMETER_VALUE,
            format!("unknown text code format \"{name}\""),
            Some(&format!("Use one of: {}.", FORMATS.join(", "))),
        )
    })
}

pub(super) fn code_error(e: CodeError, input: &str) -> ! {
    match e {
        CodeError::Overflow { .. } | CodeError::Negative(_) => {
            raise(Code::ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE, e.to_string(), None)
        }
        // not echoed: it may be anything up to 1 GB
        CodeError::TooLong { .. } => raise(Code::ERRCODE_INVALID_TEXT_REPRESENTATION, e.to_string(), None),
        CodeError::InvalidChar { format: Format::Crockford { .. }, .. } => raise_full(
            Code::ERRCODE_INVALID_TEXT_REPRESENTATION,
            e.to_string(),
            Some(format!("input: \"{input}\"")),
            Some("Crockford base32 symbols are 0-9 and A-Z without I, L, O, U (read as 1, 1, 0; case does not matter; hyphens are ignored)."),
        ),
        CodeError::InvalidChar { .. } => raise_full(
            Code::ERRCODE_INVALID_TEXT_REPRESENTATION,
            e.to_string(),
            Some(format!("input: \"{input}\"")),
            Some("base62 symbols are 0-9, A-Z and a-z (case matters)."),
        ),
        _ => raise_full(
            Code::ERRCODE_INVALID_TEXT_REPRESENTATION,
            e.to_string(),
            Some(format!("input: \"{input}\"")),
            None,
        ),
    }
}

/// The short text code of a non-negative id: `crockford` (base32, default), `crockford_check`
/// (with a check symbol) or `base62`.
#[pg_extern(immutable, strict, parallel_safe)]
pub(super) fn uid_to_text(id: i64, format: default!(&str, "'crockford'")) -> String {
    codes::encode(id, format_arg(format)).unwrap_or_else(|e| code_error(e, ""))
}

/// The id of a text code; strict: 22P02 with the position of the first bad character, 22003
/// above 2^63-1.
#[pg_extern(immutable, strict, parallel_safe)]
pub(super) fn uid_from_text(code: &str, format: default!(&str, "'crockford'")) -> i64 {
    codes::decode(code, format_arg(format)).unwrap_or_else(|e| code_error(e, code))
}

/// A masked id as a text code that carries the key version: one symbol (the version modulo 32)
/// followed by the code of `uid_mask(id, key_name)`. `uid_unmask_text` needs no version.
#[pg_extern(stable, strict, parallel_restricted)]
pub(super) fn uid_mask_text(id: i64, key_name: &str, format: default!(&str, "'crockford'")) -> String {
    let f = format_arg(format);
    let r = ring(key_name);
    let (v, m) = r.current();
    let masked = m.mask_i64(id).unwrap_or_else(|e| mask_error(e));
    let sym = codes::encode(i64::from(v % TEXT_VERSION_MODULUS), plain(f)).expect("a small number");
    sym + &codes::encode(masked, f).expect("non-negative")
}

/// The format without its check symbol (the version symbol is a bare symbol).
pub(super) fn plain(f: Format) -> Format {
    match f {
        Format::Crockford { .. } => Format::Crockford { check: false },
        other => other,
    }
}

/// The inverse of `uid_mask_text`: reads the version symbol, then unmasks with that version.
#[pg_extern(stable, strict, parallel_restricted)]
pub(super) fn uid_unmask_text(code: &str, key_name: &str, format: default!(&str, "'crockford'")) -> i64 {
    let f = format_arg(format);
    if code.len() > codes::MAX_CODE_BYTES {
        code_error(CodeError::TooLong { len: code.len() }, "");
    }
    let trimmed = if matches!(f, Format::Crockford { .. }) { code.trim_start_matches('-') } else { code };
    let mut chars = trimmed.chars();
    let first = chars.next().unwrap_or_else(|| code_error(CodeError::Empty { format: f }, code));
    let skipped = code.chars().count() - trimmed.chars().count();
    let sym = codes::decode(&first.to_string(), plain(f)).unwrap_or_else(|e| match e {
        CodeError::InvalidChar { format, ch, .. } => {
            code_error(CodeError::InvalidChar { format, position: skipped + 1, ch }, code)
        }
        e => code_error(e, code),
    }) as i32;
    let rest: String = chars.collect();
    let masked = codes::decode(&rest, f).unwrap_or_else(|e| {
        let e = match e {
            CodeError::InvalidChar { format, position, ch } => {
                CodeError::InvalidChar { format, position: position + skipped + 1, ch }
            }
            CodeError::CheckMismatch { position, found, expected } => {
                CodeError::CheckMismatch { position: position + skipped + 1, found, expected }
            }
            e => e,
        };
        code_error(e, code)
    });
    let r = ring(key_name);
    let Some((v, m)) = r.versions.iter().rev().find(|(v, _)| v % TEXT_VERSION_MODULUS == sym) else {
        raise_full(
            Code::ERRCODE_UNDEFINED_OBJECT,
            format!("mask key \"{key_name}\" has no kept version for the version symbol of \"{code}\""),
            Some(format!(
                "Versions kept: {}.",
                r.versions.iter().map(|(v, _)| v.to_string()).collect::<Vec<_>>().join(", ")
            )),
            Some("The code was made with a version that was dropped, with another key, or is mistyped."),
        )
    };
    let _ = v;
    m.unmask_i64(masked).unwrap_or_else(|e| mask_error(e))
}

// ------------------------------------------------------------------------------------------
// Key management (privileged: EXECUTE revoked from PUBLIC)
