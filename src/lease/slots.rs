//! The lease worker's round over the segment slots this node holds through the registry
//! (`pg_idgen_segment_owners`, tags created with `registry => true`), run right after each
//! successful lease round and whenever a backend asks for a higher ceiling.
//!
//! Per row of the registry that names this node's worker id (as owner or as the target of a
//! move), `pg_idgen_core::slot_registry::action` decides: serve it, release it (dropped from
//! shared memory *first*, then marked released in the registry), or take it (`floor =
//! ceiling`, one UPDATE, only while this node's worker id lease is valid under its token). Then
//! the ceilings backends are near are raised (same fence), and the rows this node holds are
//! published in shared memory (`segment::owners`) with the validity of the lease round, only
//! after the registry committed them. The safety argument is in `pg_idgen_core::slot_registry`.

use std::cell::Cell;

use pg_idgen_core::slot_registry::{action, raised_ceiling, Action, Row, RowState};

use super::registry::{Holder, RegError, Registry};
use crate::segment::owners::{self, Publish};

thread_local! {
    /// Whether the registry was seen to have the slot table (0.4.0 or later there).
    static HAS_TABLE: Cell<bool> = const { Cell::new(false) };
}

/// The registry's statement condition: this node's worker id lease is valid under its token, by
/// the registry's clock. `$3` is the worker id, `$4` the token.
fn fence(s: &str) -> String {
    format!(
        "EXISTS (SELECT FROM {s}.pg_idgen_leases l WHERE l.worker_id = $3 AND l.token = $4 \
           AND l.released_at IS NULL AND l.lease_until > pg_catalog.now())"
    )
}

/// The owner's worker id lease under the row's token has ended (`o` is the row).
fn owner_ended(s: &str) -> String {
    format!(
        "NOT EXISTS (SELECT FROM {s}.pg_idgen_leases l WHERE l.worker_id = o.owner AND l.token = o.owner_token \
           AND l.released_at IS NULL AND l.lease_until >= pg_catalog.now())"
    )
}

struct Fetched {
    tag: String,
    slot: i32,
    slots: i32,
    row: Row,
}

impl Registry {
    fn slot_table_exists(&self) -> Result<bool, RegError> {
        if HAS_TABLE.with(Cell::get) {
            return Ok(true);
        }
        let name = format!("{}.pg_idgen_segment_owners", self.schema);
        let rows = self.run(
            "registry slots",
            self.client().query("SELECT pg_catalog.to_regclass($1) IS NOT NULL", &[&name]),
        )?;
        let found = rows.first().is_some_and(|r| r.get::<_, bool>(0));
        HAS_TABLE.with(|h| h.set(found));
        Ok(found)
    }

    fn fetch_slots(&self, worker: i32) -> Result<Vec<Fetched>, RegError> {
        let s = &self.schema;
        let sql = format!(
            "SELECT o.tag, o.slot, o.slots, o.owner, o.owner_token, o.state, o.move_to, o.ceiling, o.floor, {} \
             FROM {s}.pg_idgen_segment_owners o WHERE o.owner = $1 OR o.move_to = $1 ORDER BY o.tag, o.slot",
            owner_ended(s)
        );
        let rows = self.run("registry slots", self.client().query(sql.as_str(), &[&worker]))?;
        Ok(rows
            .iter()
            .filter_map(|r| {
                let state = RowState::parse(r.get::<_, &str>(5))?;
                Some(Fetched {
                    tag: r.get(0),
                    slot: r.get(1),
                    slots: r.get(2),
                    row: Row {
                        owner: r.get::<_, i32>(3) as i64,
                        owner_token: r.get(4),
                        state,
                        move_to: r.get::<_, Option<i32>>(6).map(i64::from),
                        ceiling: r.get(7),
                        floor: r.get(8),
                        owner_lease_ended: r.get(9),
                    },
                })
            })
            .collect())
    }

    /// Marks a row this node (or its earlier start, `token`) was moving away released.
    fn release_slot(&self, tag: &str, slot: i32, worker: i32, token: Option<i64>) -> Result<(), RegError> {
        let sql = format!(
            "UPDATE {}.pg_idgen_segment_owners SET state = 'released', changed_at = pg_catalog.now() \
             WHERE tag = $1 AND slot = $2 AND owner = $3 AND owner_token IS NOT DISTINCT FROM $4 AND state = 'moving'",
            self.schema
        );
        self.run(
            "registry slot release",
            self.client().execute(sql.as_str(), &[&tag, &slot, &worker, &token]),
        )?;
        Ok(())
    }

    /// Takes a row: (floor, ceiling) after, None when the registry refused (not ours to take).
    fn take_slot(
        &self,
        tag: &str,
        slot: i32,
        worker: i32,
        token: i64,
    ) -> Result<Option<(i64, i64)>, RegError> {
        let s = &self.schema;
        let sql = format!(
            "UPDATE {s}.pg_idgen_segment_owners o SET owner = $3, owner_token = $4, state = 'held', move_to = NULL, \
               floor = o.ceiling, changed_at = pg_catalog.now() \
             WHERE o.tag = $1 AND o.slot = $2 AND {fence} \
               AND ((o.owner = $3 AND o.owner_token IS DISTINCT FROM $4 AND o.state = 'held') \
                 OR (o.move_to = $3 AND (o.state = 'released' \
                     OR (o.owner = $3 AND o.owner_token IS DISTINCT FROM $4) OR {ended}))) \
             RETURNING o.floor, o.ceiling",
            fence = fence(s),
            ended = owner_ended(s)
        );
        let rows = self
            .run("registry slot take", self.client().query(sql.as_str(), &[&tag, &slot, &worker, &token]))?;
        Ok(rows.first().map(|r| (r.get(0), r.get(1))))
    }

    /// Raises the ceiling of a row this server holds: (floor, ceiling) after, None when refused.
    fn raise_slot(
        &self,
        tag: &str,
        slot: i32,
        worker: i32,
        token: i64,
        ceiling: i64,
    ) -> Result<Option<(i64, i64)>, RegError> {
        let s = &self.schema;
        let sql = format!(
            "UPDATE {s}.pg_idgen_segment_owners o SET ceiling = GREATEST(o.ceiling, $5), changed_at = pg_catalog.now() \
             WHERE o.tag = $1 AND o.slot = $2 AND o.owner = $3 AND o.owner_token = $4 AND o.state = 'held' AND {fence} \
             RETURNING o.floor, o.ceiling",
            fence = fence(s)
        );
        let rows = self.run(
            "registry slot ceiling",
            self.client().query(sql.as_str(), &[&tag, &slot, &worker, &token, &ceiling]),
        )?;
        Ok(rows.first().map(|r| (r.get(0), r.get(1))))
    }
}

/// One round for worker id `worker` (held under this server's token), whose lease round
/// granted validity until `until` (CLOCK_BOOTTIME ms). On an error nothing is published: what
/// was published keeps the validity of an earlier round and runs out.
pub fn round(reg: &mut Registry, me: &Holder, worker: i64, until: u64) -> Result<(), RegError> {
    reg.connect()?;
    let r = round_connected(reg, me, worker, until);
    if r.is_err() {
        reg.disconnect();
    }
    r
}

fn round_connected(reg: &Registry, me: &Holder, worker: i64, until: u64) -> Result<(), RegError> {
    if !reg.slot_table_exists()? {
        owners::publish(&[]);
        owners::set_valid_until(until);
        return Ok(());
    }
    let w = worker as i32;
    let mut serve: Vec<Publish> = Vec::new();
    for f in reg.fetch_slots(w)? {
        let (floor, ceiling) = match action(worker, me.token, &f.row) {
            Action::Serve => (f.row.floor, f.row.ceiling),
            Action::Release => {
                // Stop serving here first; only then may another node take it.
                owners::drop_slot(&f.tag, f.slot);
                reg.release_slot(&f.tag, f.slot, w, f.row.owner_token)?;
                continue;
            }
            Action::Take => match reg.take_slot(&f.tag, f.slot, w, me.token)? {
                Some(fc) => {
                    pgrx::log!(
                        "pg_idgen lease: slot {} of segment tag \"{}\" taken by worker id {worker}: it continues at chunk {} of the slot",
                        f.slot,
                        f.tag,
                        fc.0
                    );
                    fc
                }
                None => continue,
            },
            Action::Ignore => continue,
        };
        serve.push(Publish { tag: f.tag, slot: f.slot, slots: f.slots, floor, ceiling });
    }
    let wants = owners::wants();
    let mut refused = Vec::new();
    for (i, p) in serve.iter_mut().enumerate() {
        let want = wants.iter().find(|(t, s, _)| *t == p.tag && *s == p.slot).map_or(0, |w| w.2).max(p.floor);
        if let Some(c) = raised_ceiling(p.ceiling, want) {
            match reg.raise_slot(&p.tag, p.slot, w, me.token, c)? {
                Some((f, c)) => {
                    p.floor = f;
                    p.ceiling = c;
                }
                None => refused.push(i),
            }
        }
    }
    for i in refused.into_iter().rev() {
        serve.remove(i); // no longer ours (taken after an expiry), or our lease ended
    }
    let overflow = owners::publish(&serve);
    if overflow > 0 {
        pgrx::warning!(
            "pg_idgen lease: {overflow} registry slots not served: this node holds more than {} (tag, slot) pairs",
            owners::MAX_HELD
        );
    }
    owners::set_valid_until(until);
    Ok(())
}
