//! Key administration (create, rotate, in use, drop; not executable by PUBLIC) and the guard
//! trigger that refuses to lose a key in use.

use std::ffi::CStr;

use pg_idgen_core::mask::KEY_LEN;
use pgrx::prelude::*;
use pgrx::{PgTrigger, PgTriggerError};

use super::keys::{as_key_owner, no_such_key, TEXT_VERSION_MODULUS};
use crate::catalog::{extension_schema, prevent_during_recovery};
use crate::errors::{raise, Code};

pub(super) fn check_key_name(name: &str) {
    if !(1..=63).contains(&name.len())
        || !name.starts_with(|c: char| c.is_ascii_lowercase())
        || !name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
    {
        raise(
            Code::ERRCODE_INVALID_PARAMETER_VALUE,
            format!("invalid mask key name \"{name}\""),
            Some("A key name is 1 to 63 characters: a lower-case letter, then lower-case letters, digits or underscores."),
        );
    }
}

pub(super) fn current_user_name() -> String {
    unsafe {
        let p = pg_sys::GetUserNameFromId(pg_sys::GetUserId(), false);
        CStr::from_ptr(p).to_string_lossy().into_owned()
    }
}

/// The versions of a key, with the table locked against other key changes.
pub(super) struct Versions {
    /// Kept (not dropped) versions.
    pub(super) kept: Vec<i32>,
    /// Every version with a row, dropped ones too (their codes may still exist).
    pub(super) all: Vec<i32>,
    /// The highest version number used (0: none).
    pub(super) max: i32,
}

impl Versions {
    /// Refuses to make version `new` while a row of a version with the same text symbol exists:
    /// a text code carries the version modulo 32, so version `new` would decode that version's
    /// codes (kept: ambiguously; dropped: silently to a wrong id instead of 42704).
    pub(super) fn check_symbol_free(&self, name: &str, new: i32) {
        let Some(&old) = self.all.iter().find(|&&v| v % TEXT_VERSION_MODULUS == new % TEXT_VERSION_MODULUS)
        else {
            return;
        };
        let kept = self.kept.contains(&old);
        crate::errors::raise_full(
            Code::ERRCODE_OBJECT_IN_USE,
            format!(
                "cannot make version {new} of mask key \"{name}\": its text symbol is that of version {old}, which is {}",
                if kept { "kept" } else { "dropped but whose text codes may still exist" }
            ),
            Some(format!(
                "Text codes from uid_mask_text() carry the version modulo {TEXT_VERSION_MODULUS}; a version's symbol stays reserved while its row exists, dropped or not, so that its codes give 42704 rather than another id."
            )),
            Some(if kept {
                "Drop the old version first (uid_mask_key_set_in_use(..., false), uid_mask_key_drop()), or start a new key name with uid_mask_key_create()."
            } else {
                "Start a new key name with uid_mask_key_create(). Only if no text code of the dropped version can ever come back, delete its row from pg_idgen_mask_keys to free the symbol."
            }),
        )
    }
}

/// The versions of a key, with the table locked against other key changes.
pub(super) fn locked_versions(name: &str) -> Versions {
    let s = extension_schema();
    Spi::connect_mut(|client| {
        client
            .update(
                format!("LOCK TABLE {s}.pg_idgen_mask_keys IN SHARE ROW EXCLUSIVE MODE").as_str(),
                None,
                &[],
            )
            .unwrap_or_else(|e| {
                raise(Code::ERRCODE_INTERNAL_ERROR, format!("could not lock the key table: {e}"), None)
            });
        let t = client
            .select(
                format!(
                    "SELECT version, key IS NOT NULL FROM {s}.pg_idgen_mask_keys \
                     WHERE name OPERATOR(pg_catalog.=) $1 ORDER BY version"
                )
                .as_str(),
                None,
                &[name.into()],
            )
            .unwrap_or_else(|e| {
                raise(Code::ERRCODE_INTERNAL_ERROR, format!("could not read the key table: {e}"), None)
            });
        let mut versions = Versions { kept: Vec::new(), all: Vec::new(), max: 0 };
        for r in t {
            let v: i32 = r.get(1).ok().flatten().unwrap_or(0);
            versions.max = versions.max.max(v);
            versions.all.push(v);
            if r.get::<bool>(2).ok().flatten() == Some(true) {
                versions.kept.push(v);
            }
        }
        versions
    })
}

/// Inserts a new random key version; `by` is the calling role (the insert runs as the owner).
pub(super) fn insert_version(name: &str, version: i32, by: &str) {
    let mut key = [0u8; KEY_LEN];
    if !unsafe { pg_sys::pg_strong_random(key.as_mut_ptr().cast(), key.len()) } {
        raise(
            Code::ERRCODE_INTERNAL_ERROR,
            "could not generate a random key (pg_strong_random failed)",
            None,
        );
    }
    let insert = format!(
        "INSERT INTO {}.pg_idgen_mask_keys (name, version, key, created_by) VALUES ($1, $2, $3, $4::pg_catalog.name)",
        extension_schema()
    );
    Spi::connect_mut(|client| {
        client
            .update(insert.as_str(), None, &[name.into(), version.into(), key.as_slice().into(), by.into()])
            .map(|_| ())
    })
    .unwrap_or_else(|e| raise(Code::ERRCODE_INTERNAL_ERROR, format!("could not store the key: {e}"), None));
    key.fill(0);
}

/// Creates a key: 32 bytes from PostgreSQL's strong random source (`pg_strong_random`, the
/// OpenSSL CSPRNG or /dev/urandom), version 1 (or the next number after dropped versions, which
/// are never reused). Returns the version.
#[pg_extern(volatile, strict, parallel_unsafe)]
pub(super) fn uid_mask_key_create(name: &str) -> i32 {
    prevent_during_recovery(c"uid_mask_key_create()");
    check_key_name(name);
    let by = current_user_name();
    as_key_owner(|| {
        let versions = locked_versions(name);
        if !versions.kept.is_empty() {
            raise(
                Code::ERRCODE_DUPLICATE_OBJECT,
                format!("mask key \"{name}\" already exists"),
                Some("Rotate it with uid_mask_key_rotate() to make a new version."),
            );
        }
        let new = versions.max + 1;
        versions.check_symbol_free(name, new);
        insert_version(name, new, &by);
        new
    })
}

/// Makes a new version of a key, which `uid_mask` uses from now on; older versions stay
/// usable for unmasking until dropped. Returns the new version.
#[pg_extern(volatile, strict, parallel_unsafe)]
pub(super) fn uid_mask_key_rotate(name: &str) -> i32 {
    prevent_during_recovery(c"uid_mask_key_rotate()");
    let by = current_user_name();
    as_key_owner(|| {
        let versions = locked_versions(name);
        if versions.kept.is_empty() {
            no_such_key(name);
        }
        let new = versions.max + 1;
        versions.check_symbol_free(name, new);
        insert_version(name, new, &by);
        new
    })
}

/// Marks a key version in use (the default) or not; a version in use cannot be dropped.
#[pg_extern(volatile, strict, parallel_unsafe)]
pub(super) fn uid_mask_key_set_in_use(name: &str, version: i32, in_use: bool) {
    prevent_during_recovery(c"uid_mask_key_set_in_use()");
    let update = format!(
        "UPDATE {}.pg_idgen_mask_keys SET in_use = $3 \
         WHERE name OPERATOR(pg_catalog.=) $1 AND version OPERATOR(pg_catalog.=) $2 AND key IS NOT NULL",
        extension_schema()
    );
    let n = as_key_owner(|| {
        Spi::connect_mut(|c| {
            c.update(update.as_str(), None, &[name.into(), version.into(), in_use.into()]).map(|t| t.len())
        })
    })
    .unwrap_or_else(|e| raise(Code::ERRCODE_INTERNAL_ERROR, format!("could not update the key: {e}"), None));
    if n == 0 {
        raise(
            Code::ERRCODE_UNDEFINED_OBJECT,
            format!("mask key \"{name}\" has no kept version {version}"),
            None,
        );
    }
}

/// Drops a key version: its key bytes are erased (the row stays, so the version number is never
/// reused). Refused while the version is marked in use.
#[pg_extern(volatile, strict, parallel_unsafe)]
pub(super) fn uid_mask_key_drop(name: &str, version: i32) {
    prevent_during_recovery(c"uid_mask_key_drop()");
    let s = extension_schema();
    as_key_owner(|| {
        let kept = locked_versions(name).kept;
        if !kept.contains(&version) {
            raise(
                Code::ERRCODE_UNDEFINED_OBJECT,
                format!("mask key \"{name}\" has no kept version {version}"),
                None,
            );
        }
        // the guard trigger refuses it while the version is in use
        Spi::connect_mut(|c| {
            c.update(
                format!(
                    "UPDATE {s}.pg_idgen_mask_keys SET key = NULL, dropped_at = pg_catalog.now() \
                     WHERE name OPERATOR(pg_catalog.=) $1 AND version OPERATOR(pg_catalog.=) $2"
                )
                .as_str(),
                None,
                &[name.into(), version.into()],
            )
            .map(|_| ())
        })
        .unwrap_or_else(|e| {
            raise(Code::ERRCODE_INTERNAL_ERROR, format!("could not drop the key: {e}"), None)
        });
    })
}

pub(super) fn in_use_error(name: &str, version: i32, what: &str) -> ! {
    raise(
        Code::ERRCODE_OBJECT_IN_USE,
        format!("cannot {what} mask key \"{name}\" version {version}: it is marked in use"),
        Some(&format!(
            "Ids masked with it could never be unmasked again. If that is intended: SELECT uid_mask_key_set_in_use('{name}', {version}, false);"
        )),
    )
}

/// Row and TRUNCATE guard on the key table: key bytes are write-once; a version in use cannot
/// be deleted, erased or truncated away (by the functions or by hand).
#[pg_trigger]
pub(super) fn pg_idgen_mask_keys_guard<'a>(
    trigger: &'a PgTrigger<'a>,
) -> Result<Option<PgHeapTuple<'a, AllocatedByPostgres>>, PgTriggerError> {
    use pgrx::PgTriggerOperation as Op;
    match trigger.op()? {
        Op::Delete => {
            let old = trigger.old().expect("a row DELETE trigger has OLD");
            let name: String = old.get_by_name("name").ok().flatten().unwrap_or_default();
            let version: i32 = old.get_by_name("version").ok().flatten().unwrap_or(0);
            let kept = old.get_by_name::<&[u8]>("key").ok().flatten().is_some();
            if kept && old.get_by_name::<bool>("in_use").ok().flatten() != Some(false) {
                in_use_error(&name, version, "delete");
            }
            Ok(Some(old))
        }
        Op::Update => {
            let old = trigger.old().expect("a row UPDATE trigger has OLD");
            let new = trigger.new().expect("a row UPDATE trigger has NEW");
            let name: String = old.get_by_name("name").ok().flatten().unwrap_or_default();
            let version: i32 = old.get_by_name("version").ok().flatten().unwrap_or(0);
            let new_name: Option<String> = new.get_by_name("name").ok().flatten();
            let new_version: Option<i32> = new.get_by_name("version").ok().flatten();
            let old_key: Option<&[u8]> = old.get_by_name("key").ok().flatten();
            let new_key: Option<&[u8]> = new.get_by_name("key").ok().flatten();
            if new_name.as_deref() != Some(name.as_str()) || new_version != Some(version) {
                raise(
                    Code::ERRCODE_INVALID_PARAMETER_VALUE,
                    format!("the name and version of mask key \"{name}\" version {version} cannot change"),
                    None,
                );
            }
            match (&old_key, &new_key) {
                (Some(a), Some(b)) if a != b => raise(
                    Code::ERRCODE_INVALID_PARAMETER_VALUE,
                    format!("the key bytes of mask key \"{name}\" version {version} cannot change"),
                    Some("Make a new version with uid_mask_key_rotate()."),
                ),
                (None, Some(_)) => raise(
                    Code::ERRCODE_INVALID_PARAMETER_VALUE,
                    format!("mask key \"{name}\" version {version} was dropped and cannot be brought back"),
                    None,
                ),
                (Some(_), None) if old.get_by_name::<bool>("in_use").ok().flatten() != Some(false) => {
                    in_use_error(&name, version, "drop")
                }
                _ => {}
            }
            Ok(Some(new))
        }
        Op::Truncate => {
            let live = Spi::get_one::<bool>(&format!(
                "SELECT EXISTS (SELECT FROM {}.pg_idgen_mask_keys WHERE in_use AND key IS NOT NULL)",
                extension_schema()
            ))
            .ok()
            .flatten()
            .unwrap_or(true);
            if live {
                raise(
                    Code::ERRCODE_OBJECT_IN_USE,
                    "cannot truncate pg_idgen_mask_keys: some mask keys are marked in use",
                    Some("Mark them not in use with uid_mask_key_set_in_use() first."),
                );
            }
            Ok(None)
        }
        _ => Ok(trigger.new()),
    }
}
