//! The registry client: one connection to the registry database, the claim/renew statement and
//! the release, each bounded by a timeout. Used only by the lease worker (`lease::worker`).
//!
//! The client is `tokio-postgres` on a *current-thread* tokio runtime owned by the worker: the
//! connection's I/O runs inside `block_on` on the worker's main thread, so no other thread ever
//! exists that could touch a PostgreSQL API (the only thread tokio may start is its blocking pool,
//! to resolve a host *name* with getaddrinfo; it runs no PostgreSQL code). Every operation is
//! wrapped in `tokio::time::timeout`, so a registry that stops answering (even one whose TCP
//! peer still acknowledges) costs the worker at most that long; it then reconnects. It also
//! ends when SIGTERM arrives (but for the release at shutdown): a fast stop never waits for it.
//!
//! The registry is a database where `CREATE EXTENSION pg_idgen` (0.5.0 or later) ran: the lease
//! table is the extension's `pg_idgen_leases` (sql/lease.sql), found by the extension's schema
//! (quoted with `quote_ident`). This node writes it (and `pg_idgen_segment_owners`) only
//! through the registry's SECURITY DEFINER functions (sql/registry_nodes.sql), which hold the
//! protocol's rules and check that this node's role may act for the worker id and holds its
//! lease under this server's token: its role needs EXECUTE on them, no table rights. The session pins `search_path = pg_catalog, pg_temp` and `TimeZone = UTC`;
//! every function is named with its schema. Expiry is decided by the registry's clock only
//! (`now()` in the statements); this node never sends a time, only durations.

use std::time::Duration;

use tokio::runtime::Runtime;
use tokio_postgres::Client;

use super::conninfo::Settings;
use super::tls::{self, MakeRustls};

/// Who claims: this node's identity as the registry records it.
pub struct Holder {
    pub system_identifier: String,
    pub node_name: String,
    pub host: String,
    pub port: i32,
    /// Random per postmaster start: tells this server from a clone with the same identity.
    pub token: i64,
}

/// What a claim asks for.
#[derive(Clone, Copy)]
pub struct Claim {
    pub worker_id: i64,
    /// fixed mode: the id may be taken from any node whose lease ended. auto: only from this
    /// node's identity, or once retired.
    pub fixed: bool,
    pub ttl_s: f64,
    pub retire_s: f64,
    /// This node's bound (Unix ms by its clock) on the time of every id it may issue under the
    /// lease this claim grants; raises the row's `hwm_ms`.
    pub limit_ms: i64,
    /// The holder's lease (its token's fingerprint, `renewed_at` in µs: nodes never see another
    /// holder's token) this node has seen unchanged for at least
    /// a full ttl on its own `CLOCK_MONOTONIC`: only such an expired lease may be taken over
    /// (a released one may be at once). None: no expired lease may be taken.
    pub take: Option<(i64, i64)>,
}

/// Another node's lease of an id: for messages, and what a taker must see unchanged.
pub struct OtherHolder {
    pub text: String,
    /// The fingerprint of the holder's token and `renewed_at` (µs), None when the row was
    /// released or is gone.
    pub lease: Option<(i64, i64)>,
    /// The holder's lease_ttl (ms): `lease_until - renewed_at` of its row, both by the
    /// registry's clock at one instant. A taker waits at least this long, not only its own ttl.
    pub ttl_ms: i64,
}

pub enum Outcome {
    /// The lease is ours; the registry's `since` (Unix ms), and `floor_ms`: the row's `hwm_ms`
    /// when this server (its token) took the id over from another holder (0 if none): no id of
    /// theirs is at or after it, and this node must continue above it.
    /// `has_slots`: a registry slot (`pg_idgen_segment_owners`) names the id, as owner or as
    /// the target of a move.
    Granted { since_ms: i64, floor_ms: i64, has_slots: bool },
    /// Another node holds it.
    Taken(OtherHolder),
}

pub struct Registry {
    rt: Runtime,
    client: Option<Client>,
    /// The extension's schema in the registry, quoted.
    pub(super) schema: String,
    /// The registry's identity: its cluster's system identifier and the database's oid (the
    /// same on a physical replica; another registry, or one restored from a dump, differs).
    identity: (u64, u64),
    conninfo: String,
    timeout: Duration,
    /// Whether an operation stops waiting when SIGTERM arrives (all but the release at
    /// shutdown): a server stop never waits for a registry that does not answer.
    pub(super) abort_on_term: bool,
    /// Whether the last operation failed on a lock wait in the registry (SQLSTATE 55P03, its
    /// lock_timeout): the registry answered, another of its sessions held a lock the statement
    /// needed. Set by every operation (`run`).
    lock_wait: std::cell::Cell<bool>,
}

/// An error of the registry, as text for the log and `snowflake_lease()`.
pub type RegError = String;

fn err(e: impl std::fmt::Display) -> RegError {
    let text = e.to_string();
    text.lines().next().unwrap_or("").to_string()
}

fn db_err(e: tokio_postgres::Error) -> RegError {
    match e.as_db_error() {
        Some(d) if *d.code() == tokio_postgres::error::SqlState::LOCK_NOT_AVAILABLE => format!(
            "the registry answered, but its statement waited for a lock another registry session holds until the lock_timeout ended it (SQLSTATE 55P03: {})",
            d.message()
        ),
        Some(d) => format!("{}: {}", d.severity(), d.message()),
        // tokio-postgres's own text is the kind ("error performing TLS handshake"); the cause
        // says what happened (a TLS error of `lease::tls`, an I/O error). Neither carries the
        // connection string.
        None => match std::error::Error::source(&e) {
            Some(why) => format!("{}: {}", err(&e), err(why)),
            None => err(e),
        },
    }
}

/// Blocks every signal on the calling thread (a thread of tokio's blocking pool).
fn block_all_signals() {
    // SAFETY: a zeroed sigset_t is filled by sigfillset; pthread_sigmask only changes the mask
    // of the calling thread.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&mut set);
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
    }
}

/// Whether `conninfo` is a usable connection string (the options and their values), with the
/// reason: never a part of the string (see `lease::conninfo`).
pub fn check_conninfo(conninfo: &str) -> Result<(), RegError> {
    Settings::parse(conninfo).map(|_| ())
}

impl Registry {
    pub fn new() -> Result<Registry, RegError> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            // The only threads tokio starts (its blocking pool: getaddrinfo for a host name) block
            // every signal, so that PostgreSQL's handlers (SIGHUP, SIGTERM, SIGUSR1 …) only ever
            // run on the worker's main thread.
            .on_thread_start(block_all_signals)
            // One such thread is enough (one lookup at a time), and it is kept for an hour
            // rather than tokio's 10 s: a reconnection resolves the name on the same thread.
            .max_blocking_threads(1)
            .thread_keep_alive(Duration::from_secs(3600))
            .build()
            .map_err(err)?;
        Ok(Registry {
            rt,
            client: None,
            schema: String::new(),
            identity: (0, 0),
            conninfo: String::new(),
            timeout: Duration::from_secs(5),
            abort_on_term: true,
            lock_wait: std::cell::Cell::new(false),
        })
    }

    /// Sets the connection string and the bound of every operation; a changed string drops the
    /// connection.
    pub fn configure(&mut self, conninfo: &str, timeout: Duration) {
        if conninfo != self.conninfo {
            self.client = None;
            self.conninfo = conninfo.to_string();
        }
        self.timeout = timeout;
    }

    pub fn disconnect(&mut self) {
        self.client = None;
    }

    /// Whether there is no open connection.
    pub(super) fn is_closed(&self) -> bool {
        self.client.as_ref().is_none_or(|c| c.is_closed())
    }

    /// Runs `fut` on the worker's thread, at most `self.timeout`, and (with `abort_on_term`) no
    /// longer than until SIGTERM arrives: checked every 50 ms, so that a fast shutdown never
    /// waits for a registry that does not answer.
    pub(super) fn run<T>(
        &self,
        what: &str,
        fut: impl std::future::Future<Output = Result<T, tokio_postgres::Error>>,
    ) -> Result<T, RegError> {
        use std::future::Future;
        use std::task::Poll;
        let t = self.timeout;
        let abort = self.abort_on_term;
        let out = self.rt.block_on(async {
            let mut op = std::pin::pin!(tokio::time::timeout(t, fut));
            let mut tick = tokio::time::interval(Duration::from_millis(50));
            std::future::poll_fn(|cx| {
                if let Poll::Ready(r) = op.as_mut().poll(cx) {
                    return Poll::Ready(Some(r));
                }
                // Each tick is a wake-up; the check runs on this (the worker's main) thread.
                while tick.poll_tick(cx).is_ready() {
                    if abort && super::term::term_requested() {
                        return Poll::Ready(None);
                    }
                }
                Poll::Pending
            })
            .await
        });
        self.lock_wait.set(matches!(
            &out,
            Some(Ok(Err(e))) if e.code() == Some(&tokio_postgres::error::SqlState::LOCK_NOT_AVAILABLE)
        ));
        match out {
            Some(Ok(Ok(v))) => Ok(v),
            Some(Ok(Err(e))) => Err(format!("{what}: {}", db_err(e))),
            Some(Err(_)) => Err(format!("{what}: no answer within {} ms", t.as_millis())),
            None => Err(format!("{what}: interrupted by the server's shutdown")),
        }
    }

    pub(super) fn connect(&mut self) -> Result<(), RegError> {
        if self.client.as_ref().is_some_and(|c| !c.is_closed()) {
            return Ok(());
        }
        self.client = None;
        let settings =
            Settings::parse(&self.conninfo).map_err(|e| format!("invalid pg_idgen.registry: {e}"))?;
        // The files (CA, client certificate and key, password file) are read here, at each
        // connection, by this worker: a renewed certificate is used from the next connection on.
        let tls = tls::client_config(settings.ssl_mode, &settings.tls_files)?;
        let passfile = settings.read_passfile()?;
        // One attempt per host of a multi-host string (`host=r1,r2`), each bounded by the
        // timeout on its own: tokio-postgres tries the hosts in one future, and its
        // connect_timeout covers only the TCP connect, not the start-up; with one bound for the
        // whole list, a first host that accepts and never answers (hung, or blackholed behind a
        // proxy) used all of it and the second host, the promoted standby, was never tried.
        let mut errors = Vec::new();
        let mut found = None;
        for t in &settings.targets {
            let password = settings.password_for(t, passfile.as_deref());
            let one = settings.config(t, password.as_deref(), self.timeout);
            let make = MakeRustls::new(tls.clone());
            match self.run("cannot connect to the registry", one.connect(make)) {
                Ok(c) => {
                    found = Some(c);
                    break;
                }
                Err(e) => errors.push(e),
            }
        }
        let Some((client, connection)) = found else {
            return Err(errors.join("; "));
        };
        // Polled only inside block_on, on this thread.
        self.rt.spawn(async move {
            let _ = connection.await;
        });
        let ms = self.timeout.as_millis().max(1);
        let setup = format!(
            "SET search_path = pg_catalog, pg_temp; SET TimeZone = 'UTC'; SET statement_timeout = {ms}; \
             SET lock_timeout = {ms}; SET idle_in_transaction_session_timeout = {}",
            ms * 4
        );
        self.run("registry session set-up", client.batch_execute(&setup))?;
        let rows = self.run(
            "registry",
            client.query(
                "SELECT pg_catalog.quote_ident(n.nspname) FROM pg_catalog.pg_extension e \
                 JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) e.extnamespace \
                 WHERE e.extname OPERATOR(pg_catalog.=) 'pg_idgen' \
                 AND EXISTS (SELECT FROM pg_catalog.pg_class c WHERE c.relnamespace OPERATOR(pg_catalog.=) n.oid \
                             AND c.relname OPERATOR(pg_catalog.=) 'pg_idgen_leases')",
                &[],
            ),
        )?;
        let Some(row) = rows.first() else {
            return Err("the registry database has no pg_idgen_leases table: run CREATE EXTENSION pg_idgen (0.3.0 or later; ALTER EXTENSION pg_idgen UPDATE for an older one) there".into());
        };
        self.schema = row.get(0);
        let rows = self.run(
            "registry",
            client.query(
                "SELECT pg_catalog.to_regproc($1) IS NOT NULL",
                &[&format!("{}.pg_idgen_lease_claim", self.schema)],
            ),
        )?;
        if !rows.first().is_some_and(|r| r.get::<_, bool>(0)) {
            return Err("the registry's pg_idgen is older than 0.5.0 (no function pg_idgen_lease_claim): run ALTER EXTENSION pg_idgen UPDATE in the registry database first; 0.5.0 nodes write the registry only through its functions".into());
        }
        let rows = self.run(
            "registry identity",
            client.query(
                "SELECT s.system_identifier::pg_catalog.text, d.oid::pg_catalog.int8 \
                 FROM pg_catalog.pg_control_system() s, pg_catalog.pg_database d \
                 WHERE d.datname OPERATOR(pg_catalog.=) pg_catalog.current_database()",
                &[],
            ),
        )?;
        let sysid = rows.first().and_then(|r| r.get::<_, String>(0).parse::<u64>().ok()).unwrap_or(0);
        let db = rows.first().map_or(0, |r| r.get::<_, i64>(1) as u64);
        self.identity = (sysid, db);
        self.client = Some(client);
        Ok(())
    }

    /// Connects if needed; the registry's identity (system identifier, database oid).
    pub fn identity(&mut self) -> Result<(u64, u64), RegError> {
        self.connect()?;
        Ok(self.identity)
    }

    /// Whether the last operation failed on a lock wait in the registry (55P03): not an
    /// unreachable registry, and the connection is still good.
    pub fn lock_wait(&self) -> bool {
        self.lock_wait.get()
    }

    pub(super) fn client(&self) -> &Client {
        self.client.as_ref().expect("connected")
    }

    /// Claims or renews `claim.worker_id` for `me` in one statement, decided by the registry's
    /// clock; when another node holds it, says who.
    pub fn claim(&mut self, me: &Holder, claim: &Claim) -> Result<Outcome, RegError> {
        self.connect()?;
        let r = self.claim_connected(me, claim);
        if r.is_err() && !self.lock_wait() {
            self.client = None;
        }
        r
    }

    fn claim_connected(&self, me: &Holder, claim: &Claim) -> Result<Outcome, RegError> {
        let take = claim.take.map(|t| (claim.worker_id, t));
        let (_, outcome) = self
            .call_claim(me, Some(claim.worker_id), (0, 0), claim, take)?
            .ok_or_else(|| "lease claim: the registry returned no row".to_string())?;
        Ok(outcome)
    }

    /// One call of the registry's `pg_idgen_lease_claim` (sql/registry_nodes.sql, which has the
    /// rules): claims `worker_id`, or with None chooses one of `range` and claims it, in one
    /// transaction (no table lock: each candidate is claimed on its row, and a refused claim
    /// leaves no row lock). The registry checks that this node's role may act for the id. None:
    /// no id of the range is free.
    fn call_claim(
        &self,
        me: &Holder,
        worker_id: Option<i64>,
        range: (i64, i64),
        claim: &Claim,
        take: Option<(i64, (i64, i64))>,
    ) -> Result<Option<(i64, Outcome)>, RegError> {
        let sql = format!(
            "SELECT lease_worker_id, granted, since_ms, floor_ms, has_slots, holder, holder_fp, holder_renewed_us, holder_ttl_ms \
             FROM {}.pg_idgen_lease_claim($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)",
            self.schema
        );
        let wid = worker_id.map(|w| w as i32);
        let (lo, hi) = (range.0 as i32, range.1 as i32);
        let take_id = take.map(|t| t.0 as i32);
        let (take_fp, take_renewed) = (take.map(|t| t.1 .0), take.map(|t| t.1 .1));
        let c = self.client();
        let rows = self.run(
            "lease claim",
            c.query(
                sql.as_str(),
                &[
                    &wid,
                    &lo,
                    &hi,
                    &me.system_identifier,
                    &me.node_name,
                    &me.host,
                    &me.port,
                    &me.token,
                    &claim.ttl_s,
                    &claim.fixed,
                    &claim.retire_s,
                    &claim.limit_ms,
                    &take_id,
                    &take_fp,
                    &take_renewed,
                ],
            ),
        )?;
        let Some(row) = rows.first() else { return Ok(None) };
        let id = i64::from(row.get::<_, i32>(0));
        if row.get::<_, bool>(1) {
            return Ok(Some((
                id,
                Outcome::Granted { since_ms: row.get(2), floor_ms: row.get(3), has_slots: row.get(4) },
            )));
        }
        let lease = match (row.get::<_, Option<i64>>(6), row.get::<_, Option<i64>>(7)) {
            (Some(fp), Some(renewed)) => Some((fp, renewed)),
            _ => None,
        };
        let text = row.get::<_, Option<String>>(5).unwrap_or_else(|| "another node".into());
        let ttl_ms = row.get::<_, Option<i64>>(8).unwrap_or(0).max(0);
        Ok(Some((id, Outcome::Taken(OtherHolder { text, lease, ttl_ms }))))
    }

    /// auto mode: chooses the id to claim and claims it, in one call of the registry's function,
    /// without a table lock: each candidate is decided on its row as the statement sees it, and
    /// only a grantable one is claimed (`INSERT … ON CONFLICT` on the worker id's primary key, the
    /// rules checked again against the row's newest committed version under its lock; a claim
    /// refused there is rolled back, so it keeps no lock), so two nodes that choose the same free
    /// id never both get it: the loser claims its next candidate, or passes over one whose claim
    /// is still in flight. The id is this node's own (same system identifier and node name) if the
    /// registry has one in `lo..=hi` (sticky; the claim then says whether it is free), else the
    /// smallest id of the range without a row or retired, of those this node's role may lease;
    /// None when none is free. `take`: the expired lease (id, (token fingerprint, renewed_at))
    /// this node may take over.
    pub fn choose_and_claim(
        &mut self,
        me: &Holder,
        lo: i64,
        hi: i64,
        claim: &Claim,
        take: Option<(i64, (i64, i64))>,
    ) -> Result<Option<(i64, Outcome)>, RegError> {
        self.connect()?;
        let r = self.call_claim(me, None, (lo, hi), claim, take);
        if r.is_err() && !self.lock_wait() {
            self.client = None;
        }
        r
    }

    /// Releases our lease of `worker_id` (clean shutdown): it ends now, by the registry's clock.
    /// `bound_ms`: no id this node issued (or can still issue) with the id is at or after it; the
    /// row's `hwm_ms` becomes that, or the floor this node inherited if higher (never more than
    /// it was), so that the next holder continues above every id without waiting longer.
    pub fn release(&mut self, me: &Holder, worker_id: i64, bound_ms: i64) -> Result<bool, RegError> {
        self.connect()?;
        let sql = format!("SELECT {}.pg_idgen_lease_release($1, $2, $3)", self.schema);
        let wid = worker_id as i32;
        let rows =
            self.run("lease release", self.client().query(sql.as_str(), &[&wid, &me.token, &bound_ms]))?;
        Ok(rows.first().is_some_and(|r| r.get::<_, bool>(0)))
    }
}
