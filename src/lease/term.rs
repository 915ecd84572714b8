//! The lease worker's SIGTERM latch. It sits below both the worker's main loop and its registry
//! client (which checks it every 50 ms while it waits for the registry), so that neither has to
//! call the other to know that the server is shutting down.

use std::sync::atomic::{AtomicBool, Ordering};

use pgrx::bgworkers::BackgroundWorker;

/// SIGTERM seen (pgrx's flag is cleared by each read: it is latched here, so that both the
/// registry client and the main loop see it).
static TERM: AtomicBool = AtomicBool::new(false);

/// Whether SIGTERM arrived; on the worker's main thread only.
pub(super) fn term_requested() -> bool {
    if BackgroundWorker::sigterm_received() {
        TERM.store(true, Ordering::Relaxed);
    }
    TERM.load(Ordering::Relaxed)
}
