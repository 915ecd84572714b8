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
//! Layers, one way down: a file uses only files of lower rows (`scripts/check-imports.py`, run by
//! `make test-docs`, fails on any import cycle of `src/`).
//!
//! ```text
//!  top      hot (segment_next) · admin (create, drop, set) · handover (slot release, adopt) ·
//!           status (the views)
//!  refill   refill — the shared double buffer (and the private buffer of a tag created by this
//!           transaction): asks the tag's kind for chunks, installs them, adapts the step
//!  kinds    plain · slotted · leased — the three kinds of tag, none calling another
//!  chunk    chunk — where the next chunk comes from: a tag's Kind, what a reservation returns ·
//!           owners — the slots this node holds through the lease registry (shared memory) ·
//!           marks — the registry marks of registry_marks => true tags (raise, lift)
//!  rows     slot_rows — pg_idgen_segment_slots, a slot's origin and mark, adding a slot ·
//!           backing — a backing sequence's link to its table (the row trigger)
//!  entries  claim — finding, claiming and releasing a tag's shared entry
//!  config   config — a tag's stored configuration
//!  durable  durable — one nextval per chunk, the WAL flush, the wait for synchronous standbys;
//!           a sequence's state; the backing sequences' DDL (no tag, no slot, no entry)
//!  base     table — the shared table, its locks and protocol · errors — errors and checks
//!           several files share (unknown tag, missing sequence, bigint end; superuser,
//!           writable server, arguments)
//! ```
//!
//! Only `refill` chooses a kind; only the kinds reserve chunks (through `durable`); only the top
//! row is called from SQL. The DDL is in `sql/segment.sql`.

mod admin;
pub(crate) mod backing;
mod chunk;
mod claim;
mod config;
pub(crate) mod durable;
mod errors;
mod handover;
mod hot;
mod leased;
mod marks;
pub(crate) mod owners;
mod plain;
mod refill;
mod slot_rows;
mod slotted;
mod status;
mod table;

pub use hot::invalidate;
pub(crate) use hot::text_bytes;
pub use table::{attach_shmem, request_shmem};
