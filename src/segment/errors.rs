//! The errors more than one segment file raises about a tag: an unknown tag, and a tag whose
//! backing sequence is gone. Kept apart so that `claim`, `reserve` and `admin` share them
//! without depending on each other.

use pgrx::pg_sys;

use crate::errors::{raise, Code};

/// No such tag in this database: 42704.
pub(super) fn unknown_tag(tag: &str) -> ! {
    raise(
        Code::ERRCODE_UNDEFINED_OBJECT,
        format!("segment tag \"{tag}\" does not exist"),
        Some("Create it with segment_create(tag) (as a superuser); SELECT tag FROM segment_status lists the tags of this database."),
    )
}

/// A tag's backing sequence is gone (dropped by the owner of the extension's schema, which it can
/// be, not being an extension member): no value can be reserved or trusted.
pub(super) fn missing_sequence(seqoid: pg_sys::Oid) -> ! {
    raise(
        Code::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
        format!("the backing sequence (OID {}) of a segment tag does not exist", u32::from(seqoid)),
        Some("It was dropped by hand. Values handed out before are unknown: recreate the tag with segment_create(tag, start => ...) above every value your tables hold."),
    )
}
