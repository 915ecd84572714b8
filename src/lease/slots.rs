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

use pg_idgen_core::slot_registry::{action, raised_ceiling, Action, Row, RowState};

use super::registry::{Holder, RegError, Registry};
use crate::segment::owners::{self, Publish};

struct Fetched {
    tag: String,
    slot: i32,
    slots: i32,
    row: Row,
}

// Every statement is a call of a registry function (sql/registry_nodes.sql): it checks that this
// node's role may act for the worker id and that the lease of it is valid under this server's
// token (the fence), and it holds the conditions of each step. Another holder's token is shown
// only as its fingerprint: `action` needs no more than "not this server's token".
impl Registry {
    fn fetch_slots(&self, worker: i32, token: i64) -> Result<Vec<Fetched>, RegError> {
        let sql = format!(
            "SELECT tag, slot, slots, owner, owner_token, state, move_to, ceiling, floor, owner_lease_ended \
             FROM {}.pg_idgen_slot_rows($1, $2)",
            self.schema
        );
        let rows = self.run("registry slots", self.client().query(sql.as_str(), &[&worker, &token]))?;
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

    /// Marks a row this node (or its earlier start, `seen`: the owner token as fetched) was
    /// moving away released.
    fn release_slot(
        &self,
        tag: &str,
        slot: i32,
        worker: i32,
        token: i64,
        seen: Option<i64>,
    ) -> Result<(), RegError> {
        let sql = format!("SELECT {}.pg_idgen_slot_release($1, $2, $3, $4, $5)", self.schema);
        self.run(
            "registry slot release",
            self.client().query(sql.as_str(), &[&tag, &slot, &worker, &token, &seen]),
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
        let sql = format!("SELECT floor, ceiling FROM {}.pg_idgen_slot_take($1, $2, $3, $4)", self.schema);
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
        let sql =
            format!("SELECT floor, ceiling FROM {}.pg_idgen_slot_raise($1, $2, $3, $4, $5)", self.schema);
        let rows = self.run(
            "registry slot ceiling",
            self.client().query(sql.as_str(), &[&tag, &slot, &worker, &token, &ceiling]),
        )?;
        Ok(rows.first().map(|r| (r.get(0), r.get(1))))
    }
}

/// One round for worker id `worker` (held under this server's token), whose lease round
/// granted validity until `until` (CLOCK_BOOTTIME ms). On an error nothing is published: what
/// was published keeps the validity of an earlier round and runs out. Ok(true) when it
/// published at least one slot.
pub fn round(reg: &mut Registry, me: &Holder, worker: i64, until: u64) -> Result<bool, RegError> {
    reg.connect()?;
    let r = round_connected(reg, me, worker, until);
    if r.is_err() {
        reg.disconnect();
    }
    r
}

fn round_connected(reg: &Registry, me: &Holder, worker: i64, until: u64) -> Result<bool, RegError> {
    let w = worker as i32;
    let mut serve: Vec<Publish> = Vec::new();
    for f in reg.fetch_slots(w, me.token)? {
        let (floor, ceiling) = match action(worker, me.token, &f.row) {
            Action::Serve => (f.row.floor, f.row.ceiling),
            Action::Release => {
                // Stop serving here first; only then may another node take it.
                owners::drop_slot(&f.tag, f.slot);
                reg.release_slot(&f.tag, f.slot, w, me.token, f.row.owner_token)?;
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
    Ok(!serve.is_empty())
}
