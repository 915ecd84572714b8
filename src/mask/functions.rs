//! `uid_mask`/`uid_unmask` with a named key, the IMMUTABLE raw-key forms, and FF1 itself.

use std::rc::Rc;

use pg_idgen_core::mask::{self as core_mask, Ff1Error, Mask};
use pgrx::prelude::*;

use super::keys::{mask_error, ring, ring_version, RAW};
use crate::errors::{raise, Code};

/// The masked id: a keyed permutation of 0 .. 2^63-1 (FF1-AES-256) with the key's current
/// version. STABLE: a key rotation changes the result.
#[pg_extern(stable, strict, parallel_restricted)]
pub(super) fn uid_mask(id: i64, key_name: &str) -> i64 {
    let r = ring(key_name);
    r.current().1.mask_i64(id).unwrap_or_else(|e| mask_error(e))
}

/// The masked id with one given version of the key.
#[pg_extern(stable, strict, parallel_restricted, name = "uid_mask")]
pub(super) fn uid_mask_version(id: i64, key_name: &str, version: i32) -> i64 {
    let r = ring(key_name);
    ring_version(&r, key_name, version).mask_i64(id).unwrap_or_else(|e| mask_error(e))
}

/// The id a masked id stands for, with the key's current version. Every bigint ≥ 0 unmasks to
/// some id: a masked id is not authenticated, the caller checks that the id exists.
#[pg_extern(stable, strict, parallel_restricted)]
pub(super) fn uid_unmask(masked: i64, key_name: &str) -> i64 {
    let r = ring(key_name);
    r.current().1.unmask_i64(masked).unwrap_or_else(|e| mask_error(e))
}

/// The id a masked id stands for, with one given version of the key.
#[pg_extern(stable, strict, parallel_restricted, name = "uid_unmask")]
pub(super) fn uid_unmask_version(masked: i64, key_name: &str, version: i32) -> i64 {
    let r = ring(key_name);
    ring_version(&r, key_name, version).unmask_i64(masked).unwrap_or_else(|e| mask_error(e))
}

/// The id a masked id stands for under every kept version of the key, newest first: after a
/// rotation, `WHERE id IN (SELECT id FROM uid_unmask_all($1, 'k'))` finds the row whichever
/// version masked it (another version's candidate is a random bigint, almost surely absent).
#[pg_extern(stable, strict, parallel_restricted)]
pub(super) fn uid_unmask_all(
    masked: i64,
    key_name: &str,
) -> TableIterator<'static, (name!(version, i32), name!(id, i64))> {
    let r = ring(key_name);
    let rows: Vec<(i32, i64)> = r
        .versions
        .iter()
        .rev()
        .map(|(v, m)| (*v, m.unmask_i64(masked).unwrap_or_else(|e| mask_error(e))))
        .collect();
    TableIterator::new(rows)
}

// ------------------------------------------------------------------------------------------
// Masking with a key given by the caller (IMMUTABLE)

pub(super) fn raw_mask(key: &[u8]) -> Rc<Mask> {
    if let Some(m) =
        RAW.with(|c| c.borrow().as_ref().filter(|(k, _)| k.as_slice() == key).map(|(_, m)| m.clone()))
    {
        return m;
    }
    let m = Rc::new(Mask::new(key).unwrap_or_else(|e| mask_error(e)));
    RAW.with(|c| *c.borrow_mut() = Some((key.to_vec(), m.clone())));
    m
}

/// `uid_mask` with the 32-byte key given as an argument: IMMUTABLE (usable in an index or a
/// generated column), for keys the application holds. A key written into DDL (a generated column,
/// an index expression, a view) is readable by every role through the catalogs.
#[pg_extern(immutable, strict, parallel_safe)]
pub(super) fn uid_mask_raw(id: i64, key: &[u8]) -> i64 {
    raw_mask(key).mask_i64(id).unwrap_or_else(|e| mask_error(e))
}

/// The inverse of `uid_mask_raw`.
#[pg_extern(immutable, strict, parallel_safe)]
pub(super) fn uid_unmask_raw(masked: i64, key: &[u8]) -> i64 {
    raw_mask(key).unmask_i64(masked).unwrap_or_else(|e| mask_error(e))
}

pub(super) fn ff1_sql(
    key: &[u8],
    radix: i32,
    numerals: Vec<Option<i32>>,
    tweak: &[u8],
    decrypt: bool,
) -> Vec<i32> {
    // the bounds first: the radix (the numerals' bounds are computed from it, for any int4), then
    // the lengths, so that a long array is refused before it is converted or encrypted (one call
    // is then short, and a statement of many calls is interrupted between them)
    if !(2..=65536).contains(&radix) {
        raise(
            Code::ERRCODE_INVALID_PARAMETER_VALUE,
            format!("an FF1 radix is 2 to 65536, not {radix}"),
            None,
        );
    }
    let radix = radix as u32;
    core_mask::check_ff1_lengths(radix, numerals.len(), tweak.len()).unwrap_or_else(|e| ff1_error(e));
    let ns: Vec<u16> = numerals
        .iter()
        .enumerate()
        .map(|(i, n)| match n {
            None => raise(Code::ERRCODE_NULL_VALUE_NOT_ALLOWED, format!("numeral {} is NULL", i + 1), None),
            Some(n) if u32::try_from(*n).is_ok_and(|n| n < radix) => *n as u16,
            Some(n) => raise(
                Code::ERRCODE_INVALID_PARAMETER_VALUE,
                format!("numeral {} is {n}; numerals of radix {radix} are 0 .. {}", i + 1, radix - 1),
                None,
            ),
        })
        .collect();
    core_mask::ff1(key, tweak, radix, &ns, decrypt)
        .map(|v| v.into_iter().map(i32::from).collect())
        .unwrap_or_else(|e: Ff1Error| ff1_error(e))
}

fn ff1_error(e: Ff1Error) -> ! {
    match e {
        Ff1Error::TooLong { .. } | Ff1Error::TweakTooLong { .. } => raise(
            Code::ERRCODE_PROGRAM_LIMIT_EXCEEDED,
            e.to_string(),
            Some("uid_ff1_encrypt/uid_ff1_decrypt take numeral strings of a domain up to 2^1024 values and tweaks up to 1024 bytes; split longer data."),
        ),
        _ => raise(Code::ERRCODE_INVALID_PARAMETER_VALUE, e.to_string(), None),
    }
}

/// FF1 (NIST SP 800-38G) encryption of a numeral string (first numeral most significant) with
/// an AES-128/192/256 key (16/24/32 bytes): the construction behind `uid_mask`, exposed to check
/// it against published test vectors and other implementations. `uid_mask_raw(id, key)` is
/// `uid_ff1_encrypt(key, 2, <the 63 bits of id>)`.
#[pg_extern(immutable, strict, parallel_safe)]
pub(super) fn uid_ff1_encrypt(
    key: &[u8],
    radix: i32,
    numerals: Vec<Option<i32>>,
    tweak: default!(&[u8], "'\\x'"),
) -> Vec<i32> {
    ff1_sql(key, radix, numerals, tweak, false)
}

/// The inverse of `uid_ff1_encrypt`.
#[pg_extern(immutable, strict, parallel_safe)]
pub(super) fn uid_ff1_decrypt(
    key: &[u8],
    radix: i32,
    numerals: Vec<Option<i32>>,
    tweak: default!(&[u8], "'\\x'"),
) -> Vec<i32> {
    ff1_sql(key, radix, numerals, tweak, true)
}

// ------------------------------------------------------------------------------------------
// Text codes
