//! libpq-style connection strings (`key=value …` or a `postgresql://` URI) and libpq's password
//! file format, for the lease worker's registry client.
//!
//! The string may hold a password, and every role can read the errors (`snowflake_lease()`,
//! SQLSTATE 55000): an error here names the problem and, at most, the name of a *known* option
//! near it — never a character, a position, a value, or an unknown option's name (which may be a
//! piece of a value, e.g. of an unquoted password with a space).

use std::fmt;

/// Why a connection string does not parse. Its text never contains any part of the string
/// except the names of known options.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConninfoError {
    /// A word without `=`; `after`: the option before it, if any.
    MissingEquals { after: Option<&'static str> },
    /// A quoted value without its closing quote, of option `key` (None: unknown option).
    Unterminated { key: Option<&'static str> },
    /// A name that is no option; `after`: the option before it, if any.
    Unknown { after: Option<&'static str> },
    /// An option of libpq that this client does not implement.
    Unsupported { key: &'static str },
    /// A bad `%xx` escape, or one that decodes to no UTF-8 text, in a part of a URI.
    Percent { part: &'static str },
    /// A URI's `[` without `]` (IPv6 address).
    Bracket,
    /// A URI query parameter without `=`; `after`: the parameter before it, if any.
    UriParam { after: Option<&'static str> },
}

fn after(a: &Option<&'static str>) -> String {
    match a {
        Some(k) => format!("after the value of \"{k}\""),
        None => "at the start".to_string(),
    }
}

impl fmt::Display for ConninfoError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConninfoError::MissingEquals { after: a } => write!(
                f,
                "a word without \"=\" {} (a value with spaces must be quoted: key='a value', with \\' and \\\\ for a quote and a backslash)",
                after(a)
            ),
            ConninfoError::Unterminated { key: Some(k) } => {
                write!(f, "the quoted value of \"{k}\" is unterminated (no closing ')")
            }
            ConninfoError::Unterminated { key: None } => {
                write!(f, "a quoted value is unterminated (no closing ')")
            }
            ConninfoError::Unknown { after: a } => write!(
                f,
                "an unknown option {} (see the options of the registry's connection string in docs/leases-tls.md)",
                after(a)
            ),
            ConninfoError::Unsupported { key } => {
                write!(f, "option \"{key}\" is not supported by the lease worker's registry client")
            }
            ConninfoError::Percent { part } => {
                write!(f, "an invalid percent-escape (%xx) in the URI's {part}")
            }
            ConninfoError::Bracket => write!(f, "a bracketed host address of the URI lacks its closing \"]\""),
            ConninfoError::UriParam { after: a } => {
                write!(f, "a URI parameter without \"=\" {}", after(a))
            }
        }
    }
}

/// The options the registry client implements.
pub const KNOWN: &[&str] = &[
    "host",
    "hostaddr",
    "port",
    "dbname",
    "user",
    "password",
    "passfile",
    "options",
    "application_name",
    "connect_timeout",
    "tcp_user_timeout",
    "keepalives",
    "keepalives_idle",
    "keepalives_interval",
    "keepalives_retries",
    "target_session_attrs",
    "load_balance_hosts",
    "channel_binding",
    "sslmode",
    "sslnegotiation",
    "sslrootcert",
    "sslcert",
    "sslkey",
];

/// libpq's other options: named in the error ("not supported"), since they are no secret.
const LIBPQ_OTHERS: &[&str] = &[
    "service",
    "fallback_application_name",
    "client_encoding",
    "require_auth",
    "sslpassword",
    "sslcertmode",
    "sslcompression",
    "sslcrl",
    "sslcrldir",
    "sslsni",
    "sslkeylogfile",
    "requirepeer",
    "ssl_min_protocol_version",
    "ssl_max_protocol_version",
    "gssencmode",
    "krbsrvname",
    "gsslib",
    "gssdelegation",
    "replication",
    "requiressl",
    "scram_client_key",
    "scram_server_key",
    "min_protocol_version",
    "max_protocol_version",
    "oauth_issuer",
    "oauth_client_id",
    "oauth_client_secret",
    "oauth_scope",
];

fn known(key: &str) -> Result<&'static str, Option<&'static str>> {
    if let Some(k) = KNOWN.iter().find(|k| **k == key) {
        return Ok(k);
    }
    Err(LIBPQ_OTHERS.iter().find(|k| **k == key).copied())
}

fn check_key(key: &str, prev: Option<&'static str>) -> Result<&'static str, ConninfoError> {
    match known(key) {
        Ok(k) => Ok(k),
        Err(Some(k)) => Err(ConninfoError::Unsupported { key: k }),
        Err(None) => Err(ConninfoError::Unknown { after: prev }),
    }
}

/// Parses a connection string into its options, in order (a later one of the same name wins,
/// as in libpq). Multi-host values (`host=a,b`) stay one value.
pub fn parse(s: &str) -> Result<Vec<(&'static str, String)>, ConninfoError> {
    let t = s.trim_start();
    for prefix in ["postgresql://", "postgres://"] {
        if t.len() >= prefix.len()
            && t.is_char_boundary(prefix.len())
            && t[..prefix.len()].eq_ignore_ascii_case(prefix)
        {
            return parse_uri(&t[prefix.len()..]);
        }
    }
    parse_kv(s)
}

/// libpq's `key = value` form: whitespace around `=`; a value is a run of non-space characters
/// or a single-quoted string, `\` escaping the next character in both.
fn parse_kv(s: &str) -> Result<Vec<(&'static str, String)>, ConninfoError> {
    let mut out = Vec::new();
    let mut prev: Option<&'static str> = None;
    let mut it = s.chars().peekable();
    loop {
        while it.peek().is_some_and(|c| c.is_whitespace()) {
            it.next();
        }
        if it.peek().is_none() {
            return Ok(out);
        }
        let mut key = String::new();
        while let Some(&c) = it.peek() {
            if c.is_whitespace() || c == '=' {
                break;
            }
            key.push(c);
            it.next();
        }
        while it.peek().is_some_and(|c| c.is_whitespace()) {
            it.next();
        }
        if it.next() != Some('=') {
            return Err(ConninfoError::MissingEquals { after: prev });
        }
        // The key is checked before its value is read, so that an unknown key is reported as
        // such (and an unterminated quote after it does not name it).
        let k = check_key(&key, prev);
        while it.peek().is_some_and(|c| c.is_whitespace()) {
            it.next();
        }
        let mut value = String::new();
        if it.peek() == Some(&'\'') {
            it.next();
            loop {
                match it.next() {
                    None => return Err(ConninfoError::Unterminated { key: k.ok() }),
                    Some('\\') => match it.next() {
                        Some(c) => value.push(c),
                        None => return Err(ConninfoError::Unterminated { key: k.ok() }),
                    },
                    Some('\'') => break,
                    Some(c) => value.push(c),
                }
            }
        } else {
            while let Some(&c) = it.peek() {
                if c.is_whitespace() {
                    break;
                }
                it.next();
                if c == '\\' {
                    if let Some(e) = it.next() {
                        value.push(e);
                    }
                } else {
                    value.push(c);
                }
            }
        }
        let k = k?;
        out.push((k, value));
        prev = Some(k);
    }
}

fn percent_decode(s: &str, part: &'static str) -> Result<String, ConninfoError> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = |c: u8| (c as char).to_digit(16);
            match (b.get(i + 1).copied().and_then(hex), b.get(i + 2).copied().and_then(hex)) {
                (Some(h), Some(l)) if h * 16 + l != 0 => out.push((h * 16 + l) as u8),
                _ => return Err(ConninfoError::Percent { part }),
            }
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| ConninfoError::Percent { part })
}

/// libpq's URI form after the scheme:
/// `[user[:password]@][host][:port][,host[:port]…][/dbname][?key=value&…]`.
fn parse_uri(rest: &str) -> Result<Vec<(&'static str, String)>, ConninfoError> {
    let mut out: Vec<(&'static str, String)> = Vec::new();
    // The part before the first '/' or '?' is the authority (user info and hosts).
    let end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, mut tail) = rest.split_at(end);
    let hosts_part = match authority.rfind('@') {
        Some(at) => {
            let info = &authority[..at];
            let (user, password) = match info.find(':') {
                Some(c) => (&info[..c], Some(&info[c + 1..])),
                None => (info, None),
            };
            if !user.is_empty() {
                out.push(("user", percent_decode(user, "user name")?));
            }
            if let Some(p) = password {
                out.push(("password", percent_decode(p, "password")?));
            }
            &authority[at + 1..]
        }
        None => authority,
    };
    let (mut hosts, mut ports) = (Vec::new(), Vec::new());
    let mut any_port = false;
    if !hosts_part.is_empty() {
        for spec in split_hosts(hosts_part)? {
            let (h, p) = if let Some(r) = spec.strip_prefix('[') {
                let close = r.find(']').ok_or(ConninfoError::Bracket)?;
                let after = &r[close + 1..];
                (&r[..close], after.strip_prefix(':'))
            } else {
                match spec.rfind(':') {
                    Some(c) => (&spec[..c], Some(&spec[c + 1..])),
                    None => (spec, None),
                }
            };
            hosts.push(percent_decode(h, "host")?);
            any_port |= p.is_some();
            ports.push(p.map(|p| percent_decode(p, "port")).transpose()?.unwrap_or_default());
        }
        if hosts.iter().any(|h| !h.is_empty()) {
            out.push(("host", hosts.join(",")));
        }
        if any_port {
            out.push(("port", ports.join(",")));
        }
    }
    if let Some(t) = tail.strip_prefix('/') {
        let end = t.find('?').unwrap_or(t.len());
        if end > 0 {
            out.push(("dbname", percent_decode(&t[..end], "database name")?));
        }
        tail = &t[end..];
    }
    if let Some(q) = tail.strip_prefix('?') {
        let mut prev: Option<&'static str> = None;
        for pair in q.split('&').filter(|p| !p.is_empty()) {
            let Some((k, v)) = pair.split_once('=') else {
                return Err(ConninfoError::UriParam { after: prev });
            };
            let k = percent_decode(k, "parameters")?;
            let v = percent_decode(v, "parameters")?;
            // libpq's JDBC-compatible `ssl=true`.
            let (k, v) = if k == "ssl" && v == "true" {
                ("sslmode".to_string(), "require".to_string())
            } else {
                (k, v)
            };
            let k = check_key(&k, prev)?;
            out.push((k, v));
            prev = Some(k);
        }
    }
    Ok(out)
}

/// The host specs of a URI's authority, split at the commas outside `[…]`.
fn split_hosts(s: &str) -> Result<Vec<&str>, ConninfoError> {
    let mut out = Vec::new();
    let (mut start, mut depth) = (0, false);
    for (i, c) in s.char_indices() {
        match c {
            '[' => depth = true,
            ']' => depth = false,
            ',' if !depth => {
                out.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    if depth {
        return Err(ConninfoError::Bracket);
    }
    out.push(&s[start..]);
    Ok(out)
}

/// One field of a password file line: `*` matches anything, otherwise the field (with `\`
/// escaping the next character) must equal `want`. Returns the rest of the line after the
/// field's `:`, or None when it does not match.
fn pass_field<'a>(line: &'a str, want: &str) -> Option<&'a str> {
    if let Some(rest) = line.strip_prefix("*:") {
        return Some(rest);
    }
    let mut want = want.chars();
    let mut it = line.char_indices();
    while let Some((i, c)) = it.next() {
        let c = match c {
            ':' => return want.next().is_none().then(|| &line[i + 1..]),
            '\\' => match it.next() {
                Some((_, e)) => e,
                None => return None,
            },
            c => c,
        };
        if want.next() != Some(c) {
            return None;
        }
    }
    None
}

/// The password of the first line of a password file (libpq's format,
/// `hostname:port:database:username:password`) that matches: `*` matches any value of a field,
/// `\` escapes `:` and `\`; lines starting with `#` are comments. The password ends at the
/// next unescaped `:` or at the end of the line.
pub fn passfile_lookup(content: &str, host: &str, port: &str, dbname: &str, user: &str) -> Option<String> {
    for line in content.lines() {
        let line = line.strip_suffix('\r').unwrap_or(line);
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let Some(rest) = pass_field(line, host)
            .and_then(|r| pass_field(r, port))
            .and_then(|r| pass_field(r, dbname))
            .and_then(|r| pass_field(r, user))
        else {
            continue;
        };
        let mut pw = String::new();
        let mut it = rest.chars();
        while let Some(c) = it.next() {
            match c {
                ':' => break,
                '\\' => match it.next() {
                    Some(e) => pw.push(e),
                    None => pw.push('\\'),
                },
                c => pw.push(c),
            }
        }
        if pw.is_empty() {
            return None;
        }
        return Some(pw);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kv(s: &str) -> Vec<(&'static str, String)> {
        parse(s).unwrap()
    }
    fn pairs(v: &[(&'static str, &str)]) -> Vec<(&'static str, String)> {
        v.iter().map(|(k, v)| (*k, v.to_string())).collect()
    }

    #[test]
    fn key_value_form() {
        assert_eq!(
            kv("host=r1,r2  port = 5432,5433 dbname='my db' password='it\\'s \\\\ x' user=a\\ b"),
            pairs(&[
                ("host", "r1,r2"),
                ("port", "5432,5433"),
                ("dbname", "my db"),
                ("password", "it's \\ x"),
                ("user", "a b")
            ])
        );
        assert_eq!(kv(""), vec![]);
        assert_eq!(
            kv("  sslmode=verify-full sslrootcert=/a/ca.crt "),
            pairs(&[("sslmode", "verify-full"), ("sslrootcert", "/a/ca.crt")])
        );
        assert_eq!(kv("password="), pairs(&[("password", "")]));
    }

    /// Every error's text: no character of a value, no position, no unknown name.
    fn err_text(s: &str) -> String {
        let e = parse(s).unwrap_err().to_string();
        for secret in ["Secret", "Bpart", "zz", "ZZ", "qq", "QQ"] {
            assert!(!e.contains(secret), "{e:?} echoes {secret}");
        }
        assert!(!e.chars().any(|c| c.is_ascii_digit()), "{e:?} has a digit");
        e
    }

    #[test]
    fn errors_name_the_problem_not_the_content() {
        let e = err_text("host=h port=1 user=u password=Secret Bpart dbname=d");
        assert!(e.starts_with("a word without \"=\" after the value of \"password\""), "{e}");
        let e = err_text("host=h password=Secret Bpart=qq dbname=d");
        assert!(e.starts_with("an unknown option after the value of \"password\""), "{e}");
        let e = err_text("Bpart");
        assert!(e.contains("at the start"), "{e}");
        let e = err_text("password='Secret Bpart dbname=d");
        assert_eq!(e, "the quoted value of \"password\" is unterminated (no closing ')");
        let e = err_text("Bpart='Secret");
        assert_eq!(e, "a quoted value is unterminated (no closing ')");
        let e = err_text("host=h sslcrl=/x");
        assert_eq!(e, "option \"sslcrl\" is not supported by the lease worker's registry client");
        let e = err_text("postgresql://u:Sec%ZZret@h/d");
        assert_eq!(e, "an invalid percent-escape (%xx) in the URI's password");
        err_text("postgresql://u:Secret%@h/d");
        err_text("postgresql://u:Secret%ff@h/d");
        let e = err_text("postgresql://u@[::Secret/d");
        assert!(e.contains("bracketed"), "{e}");
        let e = err_text("postgresql://h/d?sslmode=require&Bpart");
        assert_eq!(e, "a URI parameter without \"=\" after the value of \"sslmode\"");
        let e = err_text("postgresql://h/d?zz=Secret");
        assert!(e.starts_with("an unknown option at the start"), "{e}");
    }

    #[test]
    fn uri_form() {
        assert_eq!(
            kv("postgresql://us%40r:p%3Ass@r1:5432,[::1]:5433,r3/my%20db?sslmode=verify-ca&sslrootcert=%2Fca.crt"),
            pairs(&[
                ("user", "us@r"),
                ("password", "p:ss"),
                ("host", "r1,::1,r3"),
                ("port", "5432,5433,"),
                ("dbname", "my db"),
                ("sslmode", "verify-ca"),
                ("sslrootcert", "/ca.crt")
            ])
        );
        assert_eq!(kv("postgres://"), vec![]);
        assert_eq!(
            kv("postgresql:///reg?host=%2Ftmp&ssl=true"),
            pairs(&[("dbname", "reg"), ("host", "/tmp"), ("sslmode", "require")])
        );
        assert_eq!(kv("postgresql://h"), pairs(&[("host", "h")]));
        assert_eq!(kv("POSTGRESQL://u@h:1/"), pairs(&[("user", "u"), ("host", "h"), ("port", "1")]));
    }

    #[test]
    fn passfile() {
        let f = "# comment\n\
                 other:5432:*:u:wrong\n\
                 h\\:x:5432:db:u:colon\n\
                 h:*:*:u:pa\\:ss\\\\w:rest\n\
                 *:*:*:*:any\r\n";
        assert_eq!(passfile_lookup(f, "h", "5433", "db", "u").as_deref(), Some("pa:ss\\w"));
        assert_eq!(passfile_lookup(f, "h:x", "5432", "db", "u").as_deref(), Some("colon"));
        assert_eq!(passfile_lookup(f, "other", "5432", "x", "u").as_deref(), Some("wrong"));
        assert_eq!(passfile_lookup(f, "other", "5433", "x", "u").as_deref(), Some("any"));
        assert_eq!(passfile_lookup("h:5432:db:u\n", "h", "5432", "db", "u"), None);
        assert_eq!(passfile_lookup("h:5432:db:u:\n", "h", "5432", "db", "u"), None);
        assert_eq!(passfile_lookup("hh:5432:db:u:p\n", "h", "5432", "db", "u"), None);
        assert_eq!(passfile_lookup("h:5432:db:u:p\\\n", "h", "5432", "db", "u").as_deref(), Some("p\\"));
        assert_eq!(passfile_lookup("", "h", "5432", "db", "u"), None);
    }
}
