//! Who may read what the server knows of every tenant: the admin token
//! and the rule that opens the monitor (and the probes' reasons) to a
//! visitor on this machine. The monitor's pages and the API's probes both
//! ask it.

use sha2::{Digest, Sha256};

/// The admin token, compared by its SHA-256 digest and never printed.
#[derive(Clone)]
pub struct AdminToken([u8; 32]);

impl AdminToken {
    /// Wraps a configured token; an empty one is no token.
    pub fn new(token: &str) -> Option<Self> {
        let t = token.trim();
        (!t.is_empty()).then(|| Self(Sha256::digest(t.as_bytes()).into()))
    }

    /// The token's SHA-256, lowercase hex: what an admin's monitor session
    /// records, so a new admin token ends the old sessions.
    pub fn digest_hex(&self) -> String {
        hex::encode(self.0)
    }

    /// Whether `presented` is this token.
    pub fn matches(&self, presented: &str) -> bool {
        let d: [u8; 32] = Sha256::digest(presented.as_bytes()).into();
        // Digests, not tokens, are compared: their timing says nothing
        // useful about the token.
        super::boundary::constant_time_eq(&d, &self.0)
    }
}

impl std::fmt::Debug for AdminToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("AdminToken(<redacted>)")
    }
}

/// Who may see the monitor, `/metrics` and the probes' reasons.
#[derive(Debug, Clone, Default)]
pub struct LiveAccess {
    /// Open to anyone (loopback and no admin token).
    pub open: bool,
    /// The admin token, when configured.
    pub admin: Option<AdminToken>,
    /// `/metrics` answers without the admin token even when one is set
    /// (`--metrics-open`).
    pub metrics_open: bool,
    /// The session cookie is `Secure` whatever the request says
    /// (`--cookie-secure`).
    pub cookie_secure: bool,
}

impl LiveAccess {
    /// Whether a request without a token sees every tenant: the monitor is
    /// open and no proxy says the visitor is elsewhere.
    pub fn open_to(&self, headers: &axum::http::HeaderMap) -> bool {
        self.open && !super::boundary::forwarded(headers)
    }

    /// The rule for a server bound to `addr`: open on loopback unless an
    /// admin token is configured.
    pub fn for_addr(addr: std::net::SocketAddr, admin: Option<AdminToken>) -> Self {
        Self {
            open: addr.ip().is_loopback() && admin.is_none(),
            admin,
            metrics_open: false,
            cookie_secure: false,
        }
    }
}

/// Whether a probe's caller may read why: the admin token, or a loopback
/// visitor of an open monitor (who sees every tenant there already). Any
/// other caller gets `ready` or `not ready`, nothing of the deployment.
pub fn may_read_reasons(access: &LiveAccess, headers: &axum::http::HeaderMap) -> bool {
    match &access.admin {
        Some(admin) => super::extract::bearer(headers).is_ok_and(|t| admin.matches(t)),
        None => access.open_to(headers),
    }
}
