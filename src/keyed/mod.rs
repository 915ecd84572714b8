//! Keyed sequences (WeChat seqsvr style): an increasing counter per (space, bigint key).
//!
//! Durability design. Each space is backed by a PostgreSQL sequence (`pg_idgen_keyed_<n>`,
//! `INCREMENT BY step`, owned by `pg_idgen_keyed_spaces.seq`, so dumped with its value and
//! dropped with the extension, as segment tags' sequences are). The sequence's value is the
//! space's durable bound: every value handed out for any key is at most it. Raising it is a
//! `nextval` (non-transactional: a ROLLBACK does not lower it; WAL-logged: crash recovery and
//! streaming standbys have it), then the WAL flush and the wait for synchronous standbys, and
//! only then the shared bound goes up (`space::raise_bound`).
//!
//! Keys' current values live in a fixed-size shared cache (`pg_idgen.keyed_cache_size`), as do
//! sections' floors; a key that is not cached continues from its section's floor, or the
//! space's — see `pg_idgen_core::keyed` for the rule and why it never goes back. After a restart
//! the space's floor is the sequence's value (seqsvr's restart rule).
//!
//! Files: [`table`] (shared memory, locking protocol), [`space`] (a space's configuration, its
//! shared entry, raising its bound), [`next`] (`keyed_next`, `keyed_last`), [`admin`]
//! (`keyed_create`, `keyed_drop`, the link trigger). The DDL is in `sql/keyed.sql`.

pub(crate) mod admin;
pub(crate) mod next;
mod space;
mod table;

pub use space::invalidate;
pub use table::{attach_shmem, request_shmem};
