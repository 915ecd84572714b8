//! TLS for the registry connection: a `tokio_postgres::tls::MakeTlsConnect` over rustls (its
//! `ring` provider), and the certificate checks of libpq's `sslmode`s. Used by
//! `lease::registry` only, on the lease worker's thread; the files (CA, client certificate and
//! key) are read there, at each connection.
//!
//! Why rustls: the backend process already has PostgreSQL's OpenSSL (libssl, libcrypto) loaded.
//! A Rust OpenSSL binding would resolve the same global symbols — the server's copy, whatever its
//! version — or bring a second copy, and initialise or reconfigure process-wide OpenSSL state
//! under the server. rustls is Rust; ring's C and assembly routines are prefixed
//! (`ring_core_0_17_*`), so the library exports and imports nothing OpenSSL defines.
//!
//! Checks by mode (libpq's semantics):
//! * `prefer`, `require` without `sslrootcert`: encrypted, the server's certificate unchecked
//!   (only that the handshake is signed by the key it presents).
//! * `verify-ca`, and `prefer`/`require` with `sslrootcert` (as libpq, when a root file exists):
//!   the certificate chains to a CA of `sslrootcert` and is valid now; its name is not checked.
//! * `verify-full`: that, and the host name (or IP address) the worker connected by is in the
//!   certificate's subjectAltName.

use std::future::Future;
use std::io;
use std::path::Path;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::{verify_server_cert_signed_by_trust_anchor, WebPkiServerVerifier};
use rustls::crypto::{verify_tls12_signature, verify_tls13_signature, CryptoProvider};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::server::ParsedCertificate;
use rustls::{CertificateError, DigitallySignedStruct, RootCertStore, SignatureScheme};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio_postgres::tls::{ChannelBinding, MakeTlsConnect, TlsConnect};

/// libpq's `sslmode`s that the registry client implements (`allow` is not one of them).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SslMode {
    Disable,
    Prefer,
    Require,
    VerifyCa,
    VerifyFull,
}

/// The TLS files named by the connection string.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TlsFiles {
    pub rootcert: Option<String>,
    pub cert: Option<String>,
    pub key: Option<String>,
}

/// `io::Error`'s text without its " (os error N)".
fn io_text(e: &io::Error) -> String {
    let t = e.to_string();
    match t.find(" (os error") {
        Some(i) => t[..i].to_string(),
        None => t,
    }
}

/// Most bytes read from a file the registry string names (a CA bundle, a certificate chain, a
/// key, a password file): far above any real one.
pub const MAX_FILE_BYTES: u64 = 1 << 20;

/// Reads the file `path` names for option `what` ("the file of sslrootcert", "the password file
/// (passfile)"): only a regular file (checked on the open file, so a FIFO, a device or a socket
/// is refused, never read), at most [`MAX_FILE_BYTES`]. The open does not block: a FIFO without
/// a writer would block an ordinary open (and the worker with it, deaf to SIGTERM).
pub fn read_regular(what: &str, path: &Path) -> Result<(Vec<u8>, std::fs::Metadata), String> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
        .map_err(|e| format!("cannot read {what}: {}", io_text(&e)))?;
    let md = f.metadata().map_err(|e| format!("cannot read {what}: {}", io_text(&e)))?;
    if !md.is_file() {
        return Err(format!("{what} is not a regular file"));
    }
    if md.len() > MAX_FILE_BYTES {
        return Err(format!("{what} has more than {MAX_FILE_BYTES} bytes"));
    }
    let mut bytes = Vec::new();
    f.take(MAX_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot read {what}: {}", io_text(&e)))?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(format!("{what} has more than {MAX_FILE_BYTES} bytes"));
    }
    Ok((bytes, md))
}

fn read(key: &str, path: &str) -> Result<Vec<u8>, String> {
    read_regular(&format!("the file of {key}"), Path::new(path)).map(|(b, _)| b)
}

/// Reads the private key file: a regular file with libpq's rule for its permissions (no group
/// or world access when owned by the server's user; when owned by root, at most u=rw,g=r
/// (0640)), checked on the file read.
fn read_key(path: &str) -> Result<Vec<u8>, String> {
    use std::os::unix::fs::MetadataExt;
    let (bytes, md) = read_regular("the file of sslkey", Path::new(path))?;
    let mode = md.mode();
    // SAFETY: geteuid has no preconditions and cannot fail.
    let me = unsafe { libc::geteuid() };
    let loose = if md.uid() == 0 { mode & 0o037 != 0 } else { md.uid() == me && mode & 0o077 != 0 };
    if loose {
        return Err("the file of sslkey has group or world access; it must have permissions u=rw (0600) or less if owned by the server's user, or u=rw,g=r (0640) or less if owned by root".into());
    }
    Ok(bytes)
}

fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// The rustls client configuration for `mode` and `files`, reading the files now; None for
/// `disable`.
pub fn client_config(mode: SslMode, files: &TlsFiles) -> Result<Option<Arc<rustls::ClientConfig>>, String> {
    if mode == SslMode::Disable {
        return Ok(None);
    }
    let provider = provider();
    let roots = match &files.rootcert {
        Some(path) => {
            let pem = read("sslrootcert", path)?;
            let mut roots = RootCertStore::empty();
            let mut n = 0;
            for c in CertificateDer::pem_slice_iter(&pem) {
                let c = c.map_err(|_| "the file of sslrootcert is not a PEM certificate file".to_string())?;
                roots
                    .add(c)
                    .map_err(|e| format!("a certificate of sslrootcert is not usable as a CA: {e}"))?;
                n += 1;
            }
            if n == 0 {
                return Err("the file of sslrootcert has no certificate (PEM, BEGIN CERTIFICATE)".into());
            }
            Some(Arc::new(roots))
        }
        None => None,
    };
    let verifier: Arc<dyn ServerCertVerifier> = match (mode, roots) {
        (SslMode::VerifyFull, Some(roots)) => {
            WebPkiServerVerifier::builder_with_provider(roots, provider.clone())
                .build()
                .map_err(|e| format!("sslrootcert: {e}"))?
        }
        (SslMode::VerifyFull | SslMode::VerifyCa, None) => {
            return Err(
                "sslmode verify-ca and verify-full need sslrootcert (the CA's certificate file)".into()
            )
        }
        (_, roots) => Arc::new(NameUnchecked { roots, provider: provider.clone() }),
    };
    let builder = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS set-up: {e}"))?
        .dangerous()
        .with_custom_certificate_verifier(verifier);
    let mut config = match (&files.cert, &files.key) {
        (Some(cert), Some(key)) => {
            let pem = read("sslcert", cert)?;
            let chain = CertificateDer::pem_slice_iter(&pem)
                .collect::<Result<Vec<_>, _>>()
                .map_err(|_| "the file of sslcert is not a PEM certificate file".to_string())?;
            if chain.is_empty() {
                return Err("the file of sslcert has no certificate (PEM, BEGIN CERTIFICATE)".into());
            }
            let pem = read_key(key)?;
            let key = PrivateKeyDer::from_pem_slice(&pem).map_err(|_| {
                "the file of sslkey has no unencrypted private key (PEM: PKCS#8, RSA or EC)".to_string()
            })?;
            builder.with_client_auth_cert(chain, key).map_err(|e| format!("sslcert and sslkey: {e}"))?
        }
        (None, None) => builder.with_no_client_auth(),
        _ => return Err("sslcert and sslkey go together (the client certificate and its key)".into()),
    };
    // As libpq (17+): ALPN "postgresql", which a server requires of `sslnegotiation=direct`.
    config.alpn_protocols = vec![b"postgresql".to_vec()];
    Ok(Some(Arc::new(config)))
}

/// Every mode but `verify-full`: the name is never checked. With roots (`verify-ca`, and
/// `prefer`/`require` with `sslrootcert`) the chain to a root of `sslrootcert`, validity dates and
/// key usage — everything of `verify-full` but the name; without (`prefer`/`require` and no root
/// certificate) any certificate, as libpq does. The handshake's signatures are always checked
/// against the certificate's key.
#[derive(Debug)]
struct NameUnchecked {
    roots: Option<Arc<RootCertStore>>,
    provider: Arc<CryptoProvider>,
}

impl ServerCertVerifier for NameUnchecked {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        if let Some(roots) = &self.roots {
            let cert = ParsedCertificate::try_from(end_entity)?;
            verify_server_cert_signed_by_trust_anchor(
                &cert,
                roots,
                intermediates,
                now,
                self.provider.signature_verification_algorithms.all,
            )?;
        }
        Ok(ServerCertVerified::assertion())
    }
    fn verify_tls12_signature(
        &self,
        m: &[u8],
        c: &CertificateDer<'_>,
        d: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(m, c, d, &self.provider.signature_verification_algorithms)
    }
    fn verify_tls13_signature(
        &self,
        m: &[u8],
        c: &CertificateDer<'_>,
        d: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(m, c, d, &self.provider.signature_verification_algorithms)
    }
    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider.signature_verification_algorithms.supported_schemes()
    }
}

/// A TLS failure in words: what was wrong, never a secret (the connection string is not known
/// here).
fn explain(e: &rustls::Error) -> String {
    use rustls::Error as E;
    let verify = "certificate verify failed";
    match e {
        E::InvalidCertificate(CertificateError::NotValidForName)
        | E::InvalidCertificate(CertificateError::NotValidForNameContext { .. }) => format!(
            "{verify}: name mismatch (the server's certificate does not name the host it was reached by; sslmode=verify-full)"
        ),
        E::InvalidCertificate(CertificateError::UnknownIssuer) => {
            format!("{verify}: the server's certificate is not signed by a CA of sslrootcert")
        }
        E::InvalidCertificate(CertificateError::Expired | CertificateError::ExpiredContext { .. }) => {
            format!("{verify}: the server's certificate has expired")
        }
        E::InvalidCertificate(CertificateError::NotValidYet | CertificateError::NotValidYetContext { .. }) => {
            format!("{verify}: the server's certificate is not valid yet")
        }
        E::InvalidCertificate(other) => format!("{verify}: {other:?}"),
        E::AlertReceived(alert) => format!("the server refused the TLS handshake (alert {alert:?})"),
        other => format!("TLS: {other}"),
    }
}

fn explain_io(e: io::Error) -> io::Error {
    let text = match e.get_ref().and_then(|inner| inner.downcast_ref::<rustls::Error>()) {
        Some(t) => explain(t),
        None => io_text(&e),
    };
    io::Error::new(e.kind(), text)
}

/// What tokio-postgres asks for a TLS connection: `make_tls_connect(host name)`.
#[derive(Clone)]
pub struct MakeRustls {
    /// None for `disable` (tokio-postgres then never asks for TLS).
    config: Option<Arc<rustls::ClientConfig>>,
}

impl MakeRustls {
    pub fn new(config: Option<Arc<rustls::ClientConfig>>) -> MakeRustls {
        MakeRustls { config }
    }
}

impl<S> MakeTlsConnect<S> for MakeRustls
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    type Stream = RustlsStream<S>;
    type TlsConnect = RustlsConnect;
    type Error = io::Error;

    /// tokio-postgres asks for a connector before it knows whether TLS is used (also under
    /// `disable`), so every problem is reported by `connect`, when TLS is started.
    fn make_tls_connect(&mut self, domain: &str) -> Result<RustlsConnect, io::Error> {
        let target = (|| {
            let config = self.config.clone().ok_or("TLS is disabled (sslmode=disable)")?;
            // The host name (or, with hostaddr= only, the address: `lease::conninfo`) is what the
            // certificate's name is checked against, under verify-full; a DNS name also goes
            // out as SNI.
            let name = ServerName::try_from(domain.to_string())
                .map_err(|_| "the host is not a valid DNS name or IP address for TLS")?;
            Ok((config, name))
        })();
        Ok(RustlsConnect { target })
    }
}

pub struct RustlsConnect {
    target: Result<(Arc<rustls::ClientConfig>, ServerName<'static>), &'static str>,
}

impl<S> TlsConnect<S> for RustlsConnect
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    type Stream = RustlsStream<S>;
    type Error = io::Error;
    type Future = Pin<Box<dyn Future<Output = Result<RustlsStream<S>, io::Error>> + Send>>;

    fn connect(self, stream: S) -> Self::Future {
        Box::pin(async move {
            let (config, name) = self.target.map_err(|t| io::Error::new(io::ErrorKind::InvalidInput, t))?;
            tokio_rustls::TlsConnector::from(config)
                .connect(name, stream)
                .await
                .map(|s| RustlsStream(Box::new(s)))
                .map_err(explain_io)
        })
    }
}

/// The TLS stream. Channel binding is not offered (`channel_binding=prefer` then uses plain
/// SCRAM; `require` fails).
pub struct RustlsStream<S>(Box<tokio_rustls::client::TlsStream<S>>);

impl<S: AsyncRead + AsyncWrite + Unpin> AsyncRead for RustlsStream<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut *self.0).poll_read(cx, buf).map_err(explain_io)
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> AsyncWrite for RustlsStream<S> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        Pin::new(&mut *self.0).poll_write(cx, buf)
    }
    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut *self.0).poll_flush(cx)
    }
    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut *self.0).poll_shutdown(cx)
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> tokio_postgres::tls::TlsStream for RustlsStream<S> {
    fn channel_binding(&self) -> ChannelBinding {
        ChannelBinding::none()
    }
}

/// Reads the password file: libpq's rule, a regular file without group or world access.
pub fn read_passfile(path: &Path) -> Result<Vec<u8>, String> {
    use std::os::unix::fs::MetadataExt;
    let (bytes, md) = read_regular("the password file (passfile)", path)?;
    if md.mode() & 0o077 != 0 {
        return Err("the password file (passfile) has group or world access; permissions should be u=rw (0600) or less".into());
    }
    Ok(bytes)
}
