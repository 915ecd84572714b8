//! Errors and checks shared by several segment files, at the bottom so that every file above can
//! use them without depending on a sibling: an unknown tag, a tag whose backing sequence is gone,
//! a sequence at the end of bigint; the [`Refusal`] a reservation returns instead of raising; the
//! checks of the superuser-only functions (superuser, a writable server) and their argument errors.

use pgrx::pg_sys;

use crate::errors::{raise, raise_full, Code};

/// A reservation of chunks that the tag's state refuses: the tag or its sequence is gone, this
/// node holds no slot or no valid lease, the registry did not answer, bigint is used up.
///
/// Returned, never raised, by the kinds of tag: a backend left with no value raises it at once
/// ([`Refusal::raise`]); a backend refilling *ahead*, which already holds its value, keeps that
/// value and records the failed refill. An ERROR cannot be survived inside the caller's
/// transaction without a subtransaction, and a reservation must not open one: every
/// subtransaction is a SAVEPOINT that Citus sends over the connections a COPY keeps busy (the
/// session dies), and past 64 of them in one transaction snapshots overflow their subxid cache.
/// Errors of PostgreSQL itself (a cancel, a lock timeout, a WAL flush) stay ERRORs; what `nextval`
/// would raise for the tag's state (the sequence dropped, past the largest bigint) is checked
/// before it is called (`durable::reserve_starts`).
#[must_use]
pub(super) struct Refusal {
    code: Code,
    message: String,
    detail: Option<String>,
    hint: Option<&'static str>,
}

impl Refusal {
    pub(super) fn new(code: Code, message: impl Into<String>, hint: Option<&'static str>) -> Refusal {
        Refusal { code, message: message.into(), detail: None, hint }
    }

    pub(super) fn with_detail(mut self, detail: impl Into<String>) -> Refusal {
        self.detail = Some(detail.into());
        self
    }

    /// Raises it as the ERROR it stands for.
    #[cold]
    pub(super) fn raise(self) -> ! {
        raise_full(self.code, self.message, self.detail, self.hint)
    }
}

/// No such tag in this database: 42704.
pub(super) fn no_such_tag(tag: &str) -> Refusal {
    Refusal::new(
        Code::ERRCODE_UNDEFINED_OBJECT,
        format!("segment tag \"{tag}\" does not exist"),
        Some("Create it with segment_create(tag) (as a superuser); SELECT tag FROM segment_status lists the tags of this database."),
    )
}

/// [`no_such_tag`], raised.
pub(super) fn unknown_tag(tag: &str) -> ! {
    no_such_tag(tag).raise()
}

/// A tag's backing sequence is gone (dropped by the owner of the extension's schema, which it can
/// be, not being an extension member): no value can be reserved or trusted.
pub(super) fn sequence_gone(seqoid: pg_sys::Oid) -> Refusal {
    Refusal::new(
        Code::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
        format!("the backing sequence (OID {}) of a segment tag does not exist", u32::from(seqoid)),
        Some("It was dropped by hand. Values handed out before are unknown: recreate the tag with segment_create(tag, start => ...) above every value your tables hold."),
    )
}

/// [`sequence_gone`], raised.
pub(super) fn missing_sequence(seqoid: pg_sys::Oid) -> ! {
    sequence_gone(seqoid).raise()
}

/// The chunks a reservation got would go past the largest bigint: 2200H. Names the sequence (an
/// OID says nothing to the reader, and differs between installations).
pub(super) fn past_bigint(seqoid: pg_sys::Oid) -> Refusal {
    // SAFETY: a syscache lookup by OID; NULL if the relation does not exist, else a palloc'd copy
    // of its name, read at once.
    let name = unsafe {
        let p = pg_sys::get_rel_name(seqoid);
        (!p.is_null()).then(|| std::ffi::CStr::from_ptr(p).to_string_lossy().into_owned())
    };
    let name = name.map_or_else(|| format!("with OID {}", u32::from(seqoid)), |n| format!("\"{n}\""));
    Refusal::new(
        Code::ERRCODE_SEQUENCE_GENERATOR_LIMIT_EXCEEDED,
        format!("segment sequence {name} has reached the largest bigint value"),
        None,
    )
}

/// [`past_bigint`], raised.
pub(super) fn overflow_oid(seqoid: pg_sys::Oid) -> ! {
    past_bigint(seqoid).raise()
}

/// The superuser-only functions (create, drop, set, slot hand-over): 42501 for anyone else.
pub(super) fn require_superuser(what: &str) {
    // SAFETY: reads the current user's catalog entry (cached); raises nothing.
    if !unsafe { pg_sys::superuser() } {
        raise(
            Code::ERRCODE_INSUFFICIENT_PRIVILEGE,
            format!("permission denied to {what}"),
            Some("Segment tags are configured by superusers (EXECUTE on segment_create, segment_drop and segment_set is revoked from PUBLIC)."),
        );
    }
}

/// Configuration changes run on the primary: 25006 on a standby.
pub(super) fn check_writable(what: &str) {
    // SAFETY: reads the shared recovery state.
    if unsafe { pg_sys::RecoveryInProgress() } {
        raise(
            Code::ERRCODE_READ_ONLY_SQL_TRANSACTION,
            format!("cannot {what} on a standby server"),
            Some("Run it on the primary."),
        );
    }
}

/// An invalid argument: 22023.
pub(super) fn bad(msg: impl Into<String>, hint: Option<&str>) -> ! {
    raise(Code::ERRCODE_INVALID_PARAMETER_VALUE, msg, hint)
}
