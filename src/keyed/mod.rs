//! Keyed sequences (WeChat seqsvr style): an increasing counter per (space, bigint key).
//!
//! Durability design: a durable bound per bucket of sections (seqsvr's `max_seq` per section).
//! Section `s` of a space (`section_size` consecutive keys) uses bucket `s mod 1024`
//! (`pg_idgen_core::keyed::bucket_of`); each bucket's bound is a row of `pg_idgen_keyed_bounds`
//! (1,024 rows per space, written by keyed_create, dumped with the database).
//!
//! The invariant: every value handed out for a key of bucket `b` is at most the durable bound of
//! `b`. Raising it (`space::raise_bound`) writes the row in place, a whole number of steps up
//! (`bounds`: non-transactional, so a ROLLBACK does not lower it; WAL-logged, so crash recovery
//! and streaming standbys have it), then flushes the WAL and waits for synchronous standbys, and
//! only then raises the bucket's bound in shared memory, below which alone values are handed out.
//! So the durable bound of `b` is, at any crash, immediate stop, promotion of a synchronous
//! standby or dump, at least every value handed out for the keys of `b`. The restart rule
//! follows: after a restart (or an eviction of the space's entry) a key continues from its own
//! bucket's durable bound — less than a step above the largest value handed out in that bucket,
//! whatever the space's other sections did. The state is 1,024 rows per space, whatever the
//! number of keys or calls; a raise costs one in-place write and one WAL flush per `step` values
//! of a bucket's busiest key.
//!
//! A space created with `registry => true` adds the lease registry to that invariant ([`marks`]):
//! a raise also raises the bucket's mark in the registry (through the lease worker) before the
//! bucket's shared bound moves, and a claim starts each bucket at max(local bound, mark). So a
//! lagging asynchronous standby, promoted at once, continues above the old primary's values: the
//! marks are kept per system identifier, which the standby shares.
//!
//! Each space still has a backing sequence (`pg_idgen_keyed_<n>`, owned by
//! `pg_idgen_keyed_spaces.seq`): its identity (a space dropped and created again has another),
//! the object whose heavyweight locks keep claims and raises apart, and the object whose USAGE
//! privilege is the space's. Its value was the space's bound before 0.5.0 and no longer moves.
//!
//! Keys' current values live in a fixed-size shared cache (`pg_idgen.keyed_cache_size`), as do
//! sections' floors; a key that is not cached continues from its section's floor, or its
//! bucket's — see `pg_idgen_core::keyed` for the rule and why it never goes back.
//!
//! Files: [`table`] (shared memory, locking protocol), [`space`] (a space's configuration, its
//! shared entry, raising a bound), [`bounds`] (the durable bounds: read, raised in place),
//! [`marks`] (the registry marks, through the lease worker), [`next`] (`keyed_next`, `keyed_last`), [`admin`]
//! (`keyed_create`, `keyed_drop`, the link trigger). The DDL is in `sql/keyed.sql`.

pub(crate) mod admin;
mod bounds;
pub(crate) mod marks;
pub(crate) mod next;
mod space;
mod table;

pub use space::invalidate;

/// From the shared-memory request hook: the space cache and the registry marks' request queue.
///
/// # Safety
/// Only from the shmem request hook in the postmaster, as PostgreSQL requires.
pub unsafe fn request_shmem() {
    // SAFETY: the caller is the shmem request hook.
    unsafe {
        table::request_shmem();
        marks::request_shmem();
    }
}

/// From the shared-memory startup hook, with AddinShmemInitLock held: create or attach both.
///
/// # Safety
/// Only from the shmem startup hook, with AddinShmemInitLock held.
pub unsafe fn attach_shmem() {
    // SAFETY: the caller is the shmem startup hook, holding AddinShmemInitLock.
    unsafe {
        table::attach_shmem();
        marks::attach_shmem();
    }
}
