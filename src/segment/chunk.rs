//! Where the next chunk comes from: the one notion the three kinds of tag share, below them.
//! A tag's [`Kind`] follows from its configuration; asking the kind for chunks returns
//! [`Reserved`]. The kinds, each in its own file and none calling another:
//!
//! * [`super::plain`] — a plain or strided tag (`nodes => N, node_index => k`): the tag's own
//!   sequence, one slot;
//! * [`super::slotted`] — a tag of stride slots whose ownership is recorded on this node
//!   (`slots => S, owned => ...`, moved by explicit hand-over);
//! * [`super::leased`] — a tag whose slots the lease registry owns (`registry => true`).
//!
//! `refill` asks the tag's kind (`refill::reserve_chunks`) and installs what it got.

use pg_idgen_core::segment::Segment;

use super::config::TagConfig;

/// The kind of a tag: which file reserves its chunks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Kind {
    Plain,
    Slotted,
    Registry,
}

impl Kind {
    pub(super) fn of(cfg: &TagConfig) -> Kind {
        if cfg.registry {
            Kind::Registry
        } else if cfg.slotted {
            Kind::Slotted
        } else {
            Kind::Plain
        }
    }
}

/// What a reservation of chunks returns: the slot they belong to (None: a plain tag), the
/// segment (None: the chunks would overflow bigint), and whether they must not be handed out
/// (`gap`: the slot was released or moved meanwhile; the caller tries again).
pub(super) struct Reserved {
    pub(super) slot: Option<i64>,
    pub(super) seg: Option<Segment>,
    pub(super) gap: bool,
}
