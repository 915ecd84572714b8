//! Pure logic of pg_idgen, with no PostgreSQL dependency so that it is testable with plain
//! `cargo test`: id layouts and their arithmetic ([`layout`]) and the snowflake clock policy
//! with an injectable clock ([`generator`]), segment arithmetic and the double buffer ([`segment`]),
//! the generator's durable state file ([`state_file`]), the keyed id mask ([`mask`]) and text
//! codes ([`codes`]), the worker id lease's shared word and validity ([`lease`]), the
//! registry's connection string and password file formats ([`conninfo`]), and what the monitor
//! warns about ahead of time ([`monitor`]).

#![forbid(unsafe_code)]

pub mod conninfo;
pub mod generator;
pub mod layout;
pub mod lease;
pub mod monitor;

pub use generator::{
    next_id, next_id_fenced, Clock, GenError, Issued, LocalState, Policy, SequenceStart, WorkerState,
};
pub use layout::{FieldOrder, IdError, Layout, LayoutError, Parts, NAMED_LAYOUTS};
pub mod keyed;
pub mod segment;
pub mod slot_registry;
pub mod slots;
pub mod state_file;

pub use state_file::{StateFile, StateFileError};
pub mod codes;
#[cfg(test)]
mod ff1_vectors;
pub mod mask;
