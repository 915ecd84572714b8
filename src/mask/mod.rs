//! Opaque public ids: `uid_mask`/`uid_unmask`, a keyed permutation of the
//! non-negative bigints (FF1-AES-256 over 63 binary digits, `pg_idgen_core::mask`), named and
//! versioned keys that ordinary roles use but cannot read, and short text codes (`uid_to_text`,
//! `uid_from_text`: Crockford base32 and base62, `pg_idgen_core::codes`).
//!
//! Keys live in `pg_idgen_mask_keys` (no privileges for PUBLIC). The mask functions read it by
//! OID without SQL (`tables`), once per backend and key name, and keep the expanded AES keys in
//! backend memory; the administration functions write it as the table's owner (a
//! security-restricted operation with the search path pinned). The catalog trigger's relcache
//! invalidation (and a DROP of the table) empties the cache in every backend, so a rotation is
//! seen by the next transaction.
//!
//! Files: [`keys`] (key rings and their cache), [`functions`] (mask, unmask, FF1), [`text`] (text
//! codes), [`admin`] (key administration and the guard trigger); the DDL is `sql/mask.sql`.

mod admin;
mod functions;
mod keys;
mod text;

#[cfg(any(test, feature = "pg_test"))]
mod pg_tests;

pub use keys::init;
