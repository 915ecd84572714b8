//! The lease worker's side of the registry marks (`keyed::marks` has the protocol): every
//! pending request, one registry call per (kind, database, space or tag) — the raises of several
//! backends and buckets in one statement — through the registry's `pg_idgen_keyed_marks()` (keyed
//! spaces) or `pg_idgen_segment_marks()` (segment tags, a bucket being a stride slot)
//! (sql/registry_nodes.sql), which check that this node's role owns the marks of its system
//! identifier. Run by the worker's loop whenever a backend woke it, with or without a lease: a
//! promoted standby reads and raises its marks before its lease is granted.

use std::time::Duration;

use crate::keyed::marks::{self, MarkKind, Taken};

use super::registry::{RegError, Registry};

impl Registry {
    /// Raises the marks of (this node, db, space) to `bounds` (bucket → bound, 0: none) and
    /// returns every mark of the space by bucket.
    /// A segment tag's marks (`kind` Segment) likewise, a bucket being a stride slot.
    fn marks(
        &self,
        kind: MarkKind,
        sysid: &str,
        db: u32,
        space: &str,
        bounds: &[i64],
    ) -> Result<Vec<i64>, RegError> {
        let (buckets, values): (Vec<i32>, Vec<i64>) =
            bounds.iter().enumerate().filter(|(_, &v)| v > 0).map(|(b, &v)| (b as i32, v)).unzip();
        let (func, what) = match kind {
            MarkKind::Keyed => ("pg_idgen_keyed_marks", "registry keyed marks"),
            MarkKind::Segment => ("pg_idgen_segment_marks", "registry segment marks"),
            MarkKind::Forget => return self.forget(sysid, bounds),
        };
        let sql = format!("SELECT * FROM {}.{func}($1, $2, $3, $4, $5)", self.schema);
        let rows =
            self.run(what, self.client().query(sql.as_str(), &[&sysid, &db, &space, &buckets, &values]))?;
        let mut out = vec![0i64; bounds.len()];
        for r in rows {
            let (b, v): (i32, i64) = (r.get(0), r.get(1));
            if let Some(slot) = out.get_mut(b as usize) {
                *slot = v;
            }
        }
        Ok(out)
    }

    /// Has the registry forget the marks of this node's databases in `packed` (database oids
    /// by `marks::pack_oids`; none: only a read) and returns, packed likewise, the databases
    /// that still have marks of this node (`pg_idgen_marks_forget`).
    fn forget(&self, sysid: &str, packed: &[i64]) -> Result<Vec<i64>, RegError> {
        let gone = marks::unpack_oids(packed);
        let sql = format!("SELECT database FROM {}.pg_idgen_marks_forget($1, $2)", self.schema);
        let rows = self.run(
            "registry marks of dropped databases",
            self.client().query(sql.as_str(), &[&sysid, &gone]),
        )?;
        let left: Vec<u32> = rows.iter().map(|r| r.get::<_, u32>(0)).collect();
        Ok(marks::pack_oids(&left))
    }
}

/// The requests of one (kind, database, space or tag): one registry call for all of them.
struct Group {
    kind: MarkKind,
    db: u32,
    name: String,
    /// The highest raise of any of the requests, per bucket (0: none).
    bounds: Vec<i64>,
    /// The requests answered by the call: (slot, id).
    reqs: Vec<(usize, u64)>,
}

/// Answers every pending request of the backends. `conninfo`, `timeout`: the lease settings.
pub fn round(reg: &mut Registry, sysid: &str, conninfo: &str, timeout: Duration) {
    let pending = marks::take_pending();
    if pending.is_empty() {
        return;
    }
    let fail_all = |pending: &[Taken], e: &str| {
        for t in pending {
            marks::complete(t.slot, t.id, Err(e));
        }
        marks::wake_waiters();
    };
    if conninfo.trim().is_empty() {
        return fail_all(&pending, "pg_idgen.registry is not set");
    }
    if let Err(e) = super::registry::check_conninfo(conninfo) {
        return fail_all(&pending, &format!("pg_idgen.registry is not a valid connection string: {e}"));
    }
    reg.configure(conninfo, timeout);
    if let Err(e) = reg.connect() {
        return fail_all(&pending, &e);
    }
    // one call per (kind, database, space or tag): the raises of every request of it, highest
    // per bucket
    let mut groups: Vec<Group> = Vec::new();
    for t in pending {
        // a request to forget databases is its own call: its buckets are oids, not raises
        let joins = t.kind != MarkKind::Forget;
        match groups.iter_mut().find(|g| joins && g.kind == t.kind && g.db == t.dbid && g.name == t.space) {
            Some(g) => {
                for (a, b) in g.bounds.iter_mut().zip(t.bounds.iter()) {
                    *a = (*a).max(*b);
                }
                g.reqs.push((t.slot, t.id));
            }
            None => groups.push(Group {
                kind: t.kind,
                db: t.dbid,
                name: t.space,
                bounds: t.bounds,
                reqs: vec![(t.slot, t.id)],
            }),
        }
    }
    let mut broken: Option<RegError> = None;
    for Group { kind, db, name, bounds, reqs } in &groups {
        let r = match &broken {
            Some(e) => Err(e.clone()),
            None => reg.marks(*kind, sysid, *db, name, bounds),
        };
        match &r {
            Ok(m) => reqs.iter().for_each(|&(s, id)| marks::complete(s, id, Ok(m))),
            Err(e) => {
                reqs.iter().for_each(|&(s, id)| marks::complete(s, id, Err(e)));
                if broken.is_none() && reg_is_gone(reg) {
                    broken = Some(e.clone());
                }
            }
        }
        marks::wake_waiters();
    }
    if broken.is_some() {
        reg.disconnect();
    }
}

/// Whether the registry connection is closed (after a failed call): the remaining groups fail
/// with the same error rather than each waiting for the timeout.
fn reg_is_gone(reg: &Registry) -> bool {
    reg.is_closed()
}
