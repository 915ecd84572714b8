//! Segment sequences: dense 64-bit counters per tag, handed out from shared memory in
//! durable batches ("segments"), Meituan Leaf's segment mode with its double buffer.
//!
//! Durability design. Each tag is backed by a real PostgreSQL sequence (created by
//! `segment_create`, named `pg_idgen_seg_<n>` in the extension's schema) with
//! `INCREMENT BY nodes*unit START start + node_index*unit`: one `nextval` reserves one *chunk* of
//! `unit` values. A reservation calls `nextval_oid` directly (non-transactional: a ROLLBACK of the
//! caller does not give it back), then `XLogFlush`es the WAL inserted so far (the sequence's
//! WAL record, which PostgreSQL writes ahead of the value, or the record of another backend's
//! reservation that covers it) and waits for synchronous standbys if any are configured — all
//! before a value of the chunk is handed out. Sequences are WAL-logged (crash recovery,
//! streaming standbys) and, created at run time, are not extension members, so pg_dump dumps them
//! with their current value; they are owned by the tags table, so DROP EXTENSION drops them
//! ([`backing`]); the tag metadata lives in `pg_idgen_segments`, registered with
//! `pg_extension_config_dump`. A restart only forgets the cached remainder (gaps, never reuse).
//!
//! Files: [`backing`] (the sequences' link to the tags table), [`table`] (the shared table, its
//! locks and the locking protocol), [`claim`] (finding and claiming a tag's entry), [`config`] (a
//! tag's stored configuration), [`errors`] (unknown tag, missing sequence), [`reserve`] (durable
//! reservations and refills), [`hot`] (`segment_next`), [`admin`] (create, drop, set),
//! [`status`] (the `segment_status` view's functions), [`slots`] (stride slots and their explicit
//! hand-over), [`owners`] (the slots held through the lease registry, in shared memory) and
//! [`leased`] (reservations of those slots). The DDL is in `sql/segment.sql`.

mod admin;
pub(crate) mod backing;
mod claim;
mod config;
mod errors;
mod hot;
mod leased;
pub(crate) mod owners;
pub(crate) mod reserve;
mod slots;
mod status;
mod table;

pub use hot::invalidate;
pub(crate) use hot::text_bytes;
pub use table::{attach_shmem, request_shmem};
