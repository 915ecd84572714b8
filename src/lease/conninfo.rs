//! `pg_idgen.registry` as connection settings: the options (parsed by
//! `pg_idgen_core::conninfo`, whose errors never echo the string) checked and turned into one
//! tokio-postgres configuration per host, with its TLS connector (`lease::tls`) and the password
//! (from the string, or from the password file `passfile`). Used by `lease::registry`.
//!
//! Every error names the problem and at most an option's name, never a value: every role reads
//! them in `snowflake_lease()` and in the 55000 of `snowflake_next()`.

use std::net::IpAddr;
use std::path::PathBuf;
use std::time::Duration;

use tokio_postgres::config::{ChannelBinding, SslNegotiation, TargetSessionAttrs};

use super::tls::{SslMode, TlsFiles};

/// A host of the string: a TCP host name or address, or a Unix socket directory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HostName {
    Tcp(String),
    Unix(PathBuf),
    /// Only `hostaddr=` names it.
    None,
}

#[derive(Clone, Debug)]
pub struct Target {
    pub host: HostName,
    pub hostaddr: Option<IpAddr>,
    pub port: u16,
}

/// The checked settings of the connection string.
#[derive(Clone, Debug)]
pub struct Settings {
    pub targets: Vec<Target>,
    pub user: String,
    pub password: Option<String>,
    pub passfile: Option<PathBuf>,
    pub dbname: Option<String>,
    pub options: Option<String>,
    pub connect_timeout: Option<Duration>,
    pub tcp_user_timeout: Option<Duration>,
    pub keepalives: bool,
    pub keepalives_idle: Option<Duration>,
    pub keepalives_interval: Option<Duration>,
    pub keepalives_retries: Option<u32>,
    pub target_session_attrs: TargetSessionAttrs,
    pub channel_binding: ChannelBinding,
    pub ssl_mode: SslMode,
    pub ssl_negotiation: SslNegotiation,
    pub tls_files: TlsFiles,
}

fn invalid(key: &str, what: &str) -> String {
    format!("invalid value of \"{key}\": {what}")
}

fn int(key: &str, v: &str) -> Result<i64, String> {
    v.trim().parse::<i64>().map_err(|_| invalid(key, "not an integer"))
}

fn secs(key: &str, v: &str) -> Result<Option<Duration>, String> {
    let n = int(key, v)?;
    if n < 0 {
        return Err(invalid(key, "negative"));
    }
    Ok((n > 0).then(|| Duration::from_secs(n as u64)))
}

fn list(v: &str) -> Vec<&str> {
    v.split(',').map(str::trim).collect()
}

/// Why `pg_idgen.registry` refuses a value, if it does (its check hook, `gucs`): a string that
/// does not parse, or one holding a password (`password=`, or a URI's `user:password@`).
///
/// A setting is shown, as it is, by SHOW, `current_setting()` and `pg_settings` (`setting`
/// and `reset_val`) to members of `pg_read_all_settings` (so to `pg_monitor`), and the
/// postmaster logs every new value of a reloaded setting ("parameter ... changed to ..."): a
/// secret has no place in it. The password goes to the password file (`passfile=`) or is
/// replaced by a client certificate. A string that does not parse is refused too: where its
/// password starts and ends cannot be told. The reason names the problem, never a value.
pub fn setting_refusal(conninfo: &str) -> Option<String> {
    if conninfo.trim().is_empty() {
        return None; // unset: leases off, or the worker says it is not set
    }
    match pg_idgen_core::conninfo::parse(conninfo) {
        Err(e) => Some(format!("pg_idgen.registry is not a valid connection string: {e}")),
        Ok(pairs) => pairs
            .iter()
            .any(|(key, value)| *key == "password" && !value.is_empty())
            .then(|| "pg_idgen.registry must not hold a password".to_string()),
    }
}

impl Settings {
    pub fn parse(conninfo: &str) -> Result<Settings, String> {
        let pairs = pg_idgen_core::conninfo::parse(conninfo).map_err(|e| e.to_string())?;
        let get = |k: &str| pairs.iter().rev().find(|(key, _)| *key == k).map(|(_, v)| v.as_str());
        let nonempty = |k: &str| get(k).filter(|v| !v.is_empty());

        let hosts: Vec<HostName> = match nonempty("host") {
            Some(v) => list(v)
                .into_iter()
                .map(|h| {
                    if h.is_empty() {
                        Err("\"host\" has an empty entry".to_string())
                    } else if h.starts_with('/') {
                        Ok(HostName::Unix(PathBuf::from(h)))
                    } else {
                        Ok(HostName::Tcp(h.to_string()))
                    }
                })
                .collect::<Result<_, _>>()?,
            None => vec![],
        };
        let hostaddrs: Vec<IpAddr> = match nonempty("hostaddr") {
            Some(v) => list(v)
                .into_iter()
                .map(|a| a.parse().map_err(|_| invalid("hostaddr", "not an IP address")))
                .collect::<Result<_, _>>()?,
            None => vec![],
        };
        if hosts.is_empty() && hostaddrs.is_empty() {
            return Err("no host: set host= (or hostaddr=)".into());
        }
        if !hosts.is_empty() && !hostaddrs.is_empty() && hosts.len() != hostaddrs.len() {
            return Err("\"host\" and \"hostaddr\" list different numbers of hosts".into());
        }
        let n = hosts.len().max(hostaddrs.len());
        let ports: Vec<u16> = match get("port") {
            Some(v) => list(v)
                .into_iter()
                .map(|p| {
                    if p.is_empty() {
                        Ok(5432)
                    } else {
                        p.parse::<u16>()
                            .ok()
                            .filter(|p| *p > 0)
                            .ok_or_else(|| invalid("port", "not a port number"))
                    }
                })
                .collect::<Result<_, _>>()?,
            None => vec![5432],
        };
        if ports.len() != 1 && ports.len() != n {
            return Err("\"port\" must list one port, or one per host".into());
        }
        let targets = (0..n)
            .map(|i| Target {
                host: hosts.get(i).cloned().unwrap_or(HostName::None),
                hostaddr: hostaddrs.get(i).copied(),
                port: if ports.len() == 1 { ports[0] } else { ports[i] },
            })
            .collect();

        let user = nonempty("user").ok_or("no user: set user=")?.to_string();
        let ssl_mode = match get("sslmode").unwrap_or("prefer") {
            "disable" => SslMode::Disable,
            "prefer" => SslMode::Prefer,
            "require" => SslMode::Require,
            "verify-ca" => SslMode::VerifyCa,
            "verify-full" => SslMode::VerifyFull,
            _ => {
                return Err(invalid(
                    "sslmode",
                    "the registry client supports disable, prefer, require, verify-ca and verify-full (not allow)",
                ))
            }
        };
        let ssl_negotiation = match get("sslnegotiation").unwrap_or("postgres") {
            "postgres" => SslNegotiation::Postgres,
            "direct" => SslNegotiation::Direct,
            _ => return Err(invalid("sslnegotiation", "postgres or direct")),
        };
        if ssl_negotiation == SslNegotiation::Direct && matches!(ssl_mode, SslMode::Disable | SslMode::Prefer)
        {
            return Err("sslnegotiation=direct needs sslmode require, verify-ca or verify-full".into());
        }
        let file = |k: &str| nonempty(k).map(str::to_string);
        let tls_files =
            TlsFiles { rootcert: file("sslrootcert"), cert: file("sslcert"), key: file("sslkey") };
        if tls_files.rootcert.as_deref() == Some("system") {
            return Err(
                "sslrootcert=system (the system's CAs) is not supported: name the CA's certificate file"
                    .into(),
            );
        }
        if matches!(ssl_mode, SslMode::VerifyCa | SslMode::VerifyFull) && tls_files.rootcert.is_none() {
            return Err(
                "sslmode verify-ca and verify-full need sslrootcert (the CA's certificate file)".into()
            );
        }
        if ssl_mode == SslMode::VerifyFull && hosts.is_empty() {
            return Err("sslmode verify-full needs host= (the name the certificate must carry; hostaddr= only says where to connect)".into());
        }
        if tls_files.cert.is_some() != tls_files.key.is_some() {
            return Err("sslcert and sslkey go together (the client certificate and its key)".into());
        }
        let keepalives = match get("keepalives") {
            Some(v) => int("keepalives", v)? != 0,
            None => true,
        };
        let target_session_attrs = match get("target_session_attrs").unwrap_or("any") {
            "any" => TargetSessionAttrs::Any,
            "read-write" => TargetSessionAttrs::ReadWrite,
            "read-only" => TargetSessionAttrs::ReadOnly,
            _ => return Err(invalid("target_session_attrs", "any, read-write or read-only")),
        };
        let channel_binding = match get("channel_binding").unwrap_or("prefer") {
            "disable" => ChannelBinding::Disable,
            "prefer" => ChannelBinding::Prefer,
            "require" => ChannelBinding::Require,
            _ => return Err(invalid("channel_binding", "disable, prefer or require")),
        };
        match get("load_balance_hosts").unwrap_or("disable") {
            // The hosts are tried in order (a failover list); `random` is accepted as before.
            "disable" | "random" => {}
            _ => return Err(invalid("load_balance_hosts", "disable or random")),
        }
        Ok(Settings {
            targets,
            user,
            // As libpq: an empty password is none (the password file is then read).
            password: nonempty("password").map(str::to_string),
            passfile: nonempty("passfile").map(PathBuf::from),
            dbname: nonempty("dbname").map(str::to_string),
            options: nonempty("options").map(str::to_string),
            connect_timeout: get("connect_timeout")
                .map(|v| secs("connect_timeout", v))
                .transpose()?
                .flatten(),
            tcp_user_timeout: get("tcp_user_timeout")
                .map(|v| {
                    let n = int("tcp_user_timeout", v)?;
                    if n < 0 {
                        return Err(invalid("tcp_user_timeout", "negative"));
                    }
                    Ok((n > 0).then(|| Duration::from_millis(n as u64)))
                })
                .transpose()?
                .flatten(),
            keepalives,
            keepalives_idle: get("keepalives_idle")
                .map(|v| secs("keepalives_idle", v))
                .transpose()?
                .flatten(),
            keepalives_interval: get("keepalives_interval")
                .map(|v| secs("keepalives_interval", v))
                .transpose()?
                .flatten(),
            keepalives_retries: get("keepalives_retries")
                .map(|v| {
                    u32::try_from(int("keepalives_retries", v)?)
                        .map_err(|_| invalid("keepalives_retries", "negative"))
                })
                .transpose()?,
            target_session_attrs,
            channel_binding,
            ssl_mode,
            ssl_negotiation,
            tls_files,
        })
    }

    /// The password for `t`: the string's, else the password file's matching line (libpq's
    /// format and permission rule), else none. Reads the file now.
    pub fn password_for(&self, t: &Target, passfile: Option<&str>) -> Option<String> {
        if let Some(p) = &self.password {
            return Some(p.clone());
        }
        let content = passfile?;
        let host = match (&t.host, t.hostaddr) {
            (HostName::Tcp(h), _) => h.clone(),
            (HostName::Unix(p), _) => p.to_string_lossy().into_owned(),
            (HostName::None, Some(a)) => a.to_string(),
            (HostName::None, None) => "localhost".into(),
        };
        let db = self.dbname.as_deref().unwrap_or(&self.user);
        pg_idgen_core::conninfo::passfile_lookup(content, &host, &t.port.to_string(), db, &self.user)
    }

    /// The password file's content, when one is named and no password is in the string; an
    /// error when it is group or world accessible (as libpq, which ignores such a file with a
    /// warning; here the worker says why it cannot log in).
    pub fn read_passfile(&self) -> Result<Option<String>, String> {
        let Some(path) = self.passfile.as_ref().filter(|_| self.password.is_none()) else {
            return Ok(None);
        };
        let bytes = super::tls::read_passfile(path)?;
        Ok(Some(String::from_utf8_lossy(&bytes).into_owned()))
    }

    /// The tokio-postgres configuration of target `t`, each connect attempt bounded by `timeout`
    /// (or connect_timeout, if shorter).
    pub fn config(&self, t: &Target, password: Option<&str>, timeout: Duration) -> tokio_postgres::Config {
        let mut c = tokio_postgres::Config::new();
        c.user(&self.user);
        if let Some(p) = password {
            c.password(p);
        }
        if let Some(d) = &self.dbname {
            c.dbname(d);
        }
        if let Some(o) = &self.options {
            c.options(o);
        }
        c.application_name("pg_idgen lease worker");
        // As libpq: TLS is never used over a Unix socket, whatever sslmode says.
        let unix = matches!(t.host, HostName::Unix(_));
        c.ssl_mode(match self.ssl_mode {
            SslMode::Disable => tokio_postgres::config::SslMode::Disable,
            _ if unix => tokio_postgres::config::SslMode::Disable,
            SslMode::Prefer => tokio_postgres::config::SslMode::Prefer,
            SslMode::Require | SslMode::VerifyCa | SslMode::VerifyFull => {
                tokio_postgres::config::SslMode::Require
            }
        });
        c.ssl_negotiation(if unix { SslNegotiation::Postgres } else { self.ssl_negotiation });
        c.channel_binding(self.channel_binding);
        c.target_session_attrs(self.target_session_attrs);
        c.connect_timeout(self.connect_timeout.map_or(timeout, |ct| ct.min(timeout)));
        if let Some(t) = self.tcp_user_timeout {
            c.tcp_user_timeout(t);
        }
        c.keepalives(self.keepalives);
        if let Some(t) = self.keepalives_idle {
            c.keepalives_idle(t);
        }
        if let Some(t) = self.keepalives_interval {
            c.keepalives_interval(t);
        }
        if let Some(r) = self.keepalives_retries {
            c.keepalives_retries(r);
        }
        match &t.host {
            HostName::Tcp(h) => {
                c.host(h);
            }
            HostName::Unix(p) => {
                c.host_path(p);
            }
            // tokio-postgres starts TLS only with a host name; the address is the name then (the
            // certificate is not checked against it: verify-full needs host=, see `parse`).
            HostName::None => {
                if let Some(a) = t.hostaddr {
                    c.host(a.to_string());
                }
            }
        }
        if let Some(a) = t.hostaddr {
            c.hostaddr(a);
        }
        c.port(t.port);
        c
    }
}
