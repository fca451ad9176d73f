//! Tenants and their API tokens.
//!
//! A token reads `idem_<tenant as hex>_<64 hex of 32 random bytes>`. The
//! tenant is part of the token, so authenticating is a lookup scoped to that
//! tenant (one shard under a distributed Postgres) and a token can only ever
//! resolve to the tenant it names. Only the token's SHA-256 is stored.

use crate::session::on;
use crate::{Error, Store};
use idem_core::TenantId;
use sha2::{Digest, Sha256};
use std::time::Duration;

/// How long a verified token (or monitor session) is trusted without asking
/// the database again: every API call authenticates, and at a thousand
/// calls a second this saves all but one round trip a second per token. It
/// is also the bound on revocation: a rotated, expired or disabled token,
/// on every instance, is refused at most this long after the change.
pub const TOKEN_CACHE_TTL: Duration = Duration::from_secs(1);
/// Verified tokens remembered at most.
const TOKEN_CACHE_CAP: usize = 10_000;

/// Verified token hashes and their tenant. Only hashes are kept, and only
/// tokens the database confirmed: a wrong token always asks the database.
pub(crate) type TokenCache = crate::expiring::Expiring<TenantId>;

/// An empty [`TokenCache`].
pub(crate) fn token_cache() -> TokenCache {
    TokenCache::new(TOKEN_CACHE_TTL, TOKEN_CACHE_CAP)
}

/// An API token, shown once at creation. `Debug` never prints it.
pub struct ApiToken(String);

impl ApiToken {
    /// The token text, to hand to the user exactly once.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for ApiToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ApiToken([redacted])")
    }
}

fn hash(token: &str) -> String {
    hex::encode(Sha256::digest(token.as_bytes()))
}

/// The tenant a token names, or None when it is not shaped like a token.
fn tenant_of(token: &str) -> Option<TenantId> {
    let rest = token.strip_prefix("idem_")?;
    let (tenant_hex, secret) = rest.split_once('_')?;
    if secret.len() != 64 || !secret.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    if tenant_hex.len() > 1024 {
        return None;
    }
    let bytes = hex::decode(tenant_hex).ok()?;
    TenantId::try_from(String::from_utf8(bytes).ok()?).ok()
}

/// The longest tenant display name, in characters.
pub const MAX_TENANT_NAME_CHARS: usize = 200;

impl Store {
    /// Registers a tenant and returns its first API token (store only its
    /// hash). A tenant that already exists is a [`Error::Conflict`].
    #[tracing::instrument(skip(self))]
    pub async fn create_tenant(&self, tenant: &TenantId, name: &str) -> Result<ApiToken, Error> {
        let n = name.chars().count();
        if n > MAX_TENANT_NAME_CHARS || name.chars().any(char::is_control) {
            return Err(Error::Invalid(format!(
                "the tenant's name is {n} characters; at most {MAX_TENANT_NAME_CHARS}, without control characters"
            )));
        }
        let token = new_token(tenant);
        let now = self.now_ms();
        let mut tx = self.transaction().await?;
        let t = tenant.as_str();
        on!(tx.insert_tenant(t, name, now)).map_err(|e| match &e {
            sqlx::Error::Database(d) if d.is_unique_violation() => {
                Error::TenantExists(tenant.to_string())
            }
            _ => Error::Database(e),
        })?;
        on!(tx.insert_token(t, &hash(token.expose()), now))?;
        tx.commit().await?;
        Ok(token)
    }

    /// The tenant a live token belongs to. Anything else (malformed,
    /// unknown, revoked, past its grace) is [`Error::NotFound`], with no
    /// hint of which; a live token of a disabled tenant is
    /// [`Error::TenantDisabled`].
    #[tracing::instrument(level = "debug", skip_all)]
    pub async fn authenticate(&self, token: &str) -> Result<TenantId, Error> {
        let tenant = tenant_of(token).ok_or(Error::NotFound)?;
        self.authenticate_hash(tenant, hash(token)).await
    }

    async fn authenticate_hash(&self, tenant: TenantId, h: String) -> Result<TenantId, Error> {
        if let Some(t) = self.inner.tokens.get(&h) {
            return Ok(t);
        }
        let mut s = self.session().await?;
        match on!(s.find_token(tenant.as_str(), &h, self.now_ms()))? {
            Some(None) => {
                self.inner.tokens.put(vec![(h, tenant.clone())]);
                Ok(tenant)
            }
            Some(Some(_)) => Err(Error::TenantDisabled(tenant.to_string())),
            None => Err(Error::NotFound),
        }
    }

    /// A new token for `tenant`, and the end of every other one `grace`
    /// from now (at once with zero). The new token is shown once, like
    /// the first.
    #[tracing::instrument(skip(self))]
    pub async fn rotate_token(
        &self,
        tenant: &TenantId,
        grace: Duration,
    ) -> Result<ApiToken, Error> {
        let token = new_token(tenant);
        let now = self.now_ms();
        let grace_ms = i64::try_from(grace.as_millis()).unwrap_or(i64::MAX);
        let mut tx = self.transaction().await?;
        let t = tenant.as_str();
        if on!(tx.tenant_info(t))?.is_none() {
            return Err(Error::NotFound);
        }
        let h = hash(token.expose());
        on!(tx.insert_token(t, &h, now))?;
        on!(tx.revoke_other_tokens(t, &h, now.saturating_add(grace_ms)))?;
        tx.commit().await?;
        Ok(token)
    }

    /// Disables `tenant` (every token refused, its data kept) or enables it
    /// again. [`Error::NotFound`] when there is no such tenant.
    #[tracing::instrument(skip(self))]
    pub async fn set_tenant_disabled(
        &self,
        tenant: &TenantId,
        disabled: bool,
    ) -> Result<(), Error> {
        let mut s = self.session().await?;
        let at = disabled.then(|| self.now_ms());
        match on!(s.set_tenant_disabled(tenant.as_str(), at))? {
            0 => Err(Error::NotFound),
            _ => Ok(()),
        }
    }

    /// One tenant's registration; [`Error::NotFound`] when there is none.
    #[tracing::instrument(level = "debug", skip(self))]
    pub async fn tenant_info(&self, tenant: &TenantId) -> Result<TenantInfo, Error> {
        let mut s = self.session().await?;
        let row = on!(s.tenant_info(tenant.as_str()))?.ok_or(Error::NotFound)?;
        Ok(TenantInfo {
            tenant: tenant.clone(),
            name: row.name,
            created_ms: row.created_ms,
            disabled_ms: row.disabled_ms,
            tokens: 0,
            newest_token_ms: None,
        })
    }

    /// Every tenant with its live tokens' count and the newest one's
    /// creation (an admin read; no token or hash leaves the store).
    #[tracing::instrument(level = "debug", skip(self))]
    pub async fn tenant_list(&self) -> Result<Vec<TenantInfo>, Error> {
        let mut s = self.session().await?;
        let rows = on!(s.tenant_list(self.now_ms()))?;
        rows.into_iter()
            .map(|r| {
                Ok(TenantInfo {
                    tenant: TenantId::try_from(r.tenant_id)
                        .map_err(|e| Error::Corrupt(e.to_string()))?,
                    name: r.name,
                    created_ms: r.created_ms,
                    disabled_ms: r.disabled_ms,
                    tokens: r.tokens,
                    newest_token_ms: r.newest_token_ms,
                })
            })
            .collect()
    }

    /// Opens a monitor login session for `owner`, valid for `ttl`; returns
    /// the id for the cookie (only its hash is stored).
    #[tracing::instrument(skip_all)]
    pub async fn open_live_session(
        &self,
        owner: &SessionOwner,
        ttl: Duration,
    ) -> Result<SessionId, Error> {
        let (scope, token_hash) = owner.row();
        let id = SessionId(format!(
            "{}.{}",
            hex::encode(scope),
            hex::encode(rand::random::<[u8; 32]>())
        ));
        let now = self.now_ms();
        let ttl_ms = i64::try_from(ttl.as_millis()).unwrap_or(i64::MAX);
        let mut s = self.session().await?;
        on!(s.insert_session(
            scope,
            &hash(id.expose()),
            token_hash,
            now,
            now.saturating_add(ttl_ms)
        ))?;
        Ok(id)
    }

    /// Who an open session speaks for: the admin (with the digest of the
    /// admin token it was opened with, for the caller to compare with the
    /// current one), or a tenant whose token is still live. Anything else
    /// is [`Error::NotFound`]; a disabled tenant is
    /// [`Error::TenantDisabled`].
    #[tracing::instrument(level = "debug", skip_all)]
    pub async fn live_session(&self, id: &str) -> Result<SessionOwner, Error> {
        let scope = session_scope(id).ok_or(Error::NotFound)?;
        let h = hash(id);
        let token_hash = {
            let mut s = self.session().await?;
            on!(s.find_session(&scope, &h, self.now_ms()))?.ok_or(Error::NotFound)?
        };
        if scope == ADMIN_SCOPE {
            return Ok(SessionOwner::Admin {
                token_digest: token_hash,
            });
        }
        let tenant = TenantId::try_from(scope).map_err(|_| Error::NotFound)?;
        let tenant = self.authenticate_hash(tenant, token_hash.clone()).await?;
        Ok(SessionOwner::Tenant { tenant, token_hash })
    }

    /// Ends a session (logout); an unknown or ended one is no error.
    #[tracing::instrument(level = "debug", skip_all)]
    pub async fn end_live_session(&self, id: &str) -> Result<(), Error> {
        let Some(scope) = session_scope(id) else {
            return Ok(());
        };
        let mut s = self.session().await?;
        on!(s.end_session(&scope, &hash(id), self.now_ms()))?;
        Ok(())
    }
}

/// The scope the admin's sessions are kept under: a tenant name no tenant
/// can take (names starting with `_` are reserved).
pub(crate) const ADMIN_SCOPE: &str = "_admin";

/// A token's hash as the store keeps it, for a caller that must name a
/// token without keeping it ([`SessionOwner::Tenant`]).
pub fn token_hash(token: &str) -> String {
    hash(token)
}

fn new_token(tenant: &TenantId) -> ApiToken {
    ApiToken(format!(
        "idem_{}_{}",
        hex::encode(tenant.as_str()),
        hex::encode(rand::random::<[u8; 32]>())
    ))
}

/// The scope a session id names, or None when it is not shaped like one.
fn session_scope(id: &str) -> Option<String> {
    let (scope_hex, secret) = id.split_once('.')?;
    if secret.len() != 64
        || !secret.bytes().all(|b| b.is_ascii_hexdigit())
        || scope_hex.len() > 1024
    {
        return None;
    }
    String::from_utf8(hex::decode(scope_hex).ok()?).ok()
}

/// Who a monitor session speaks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SessionOwner {
    /// The admin; the SHA-256 (hex) of the admin token it was opened with.
    Admin {
        /// The admin token's digest, lowercase hex.
        token_digest: String,
    },
    /// A tenant, through one of its tokens.
    Tenant {
        /// The tenant.
        tenant: TenantId,
        /// The hash of the token the session was opened with.
        token_hash: String,
    },
}

impl SessionOwner {
    fn row(&self) -> (&str, &str) {
        match self {
            SessionOwner::Admin { token_digest } => (ADMIN_SCOPE, token_digest),
            SessionOwner::Tenant { tenant, token_hash } => (tenant.as_str(), token_hash),
        }
    }
}

/// A session id, for the cookie only. `Debug` never prints it.
pub struct SessionId(String);

impl SessionId {
    /// The id, to set in the cookie.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for SessionId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SessionId([redacted])")
    }
}

/// A tenant as the admin commands show it: never a token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TenantInfo {
    /// The tenant id.
    pub tenant: TenantId,
    /// The name it was registered under.
    pub name: String,
    /// When it was registered.
    pub created_ms: i64,
    /// When it was disabled, if it is.
    pub disabled_ms: Option<i64>,
    /// Its live tokens (in [`Store::tenant_list`] only).
    pub tokens: i64,
    /// When its newest live token was created (in [`Store::tenant_list`]).
    pub newest_token_ms: Option<i64>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_names_its_tenant_and_nothing_else_parses() {
        let t = format!("idem_{}_{}", hex::encode("loja-do-zé"), "ab".repeat(32));
        assert_eq!(tenant_of(&t).unwrap().as_str(), "loja-do-zé");
        for bad in [
            "",
            "idem_",
            "idem__",
            "idem_6162_xyz",
            "idem_616_".to_owned().as_str(),
            "bearer",
            "idem_zz_00",
        ] {
            assert!(tenant_of(bad).is_none(), "{bad:?}");
        }
        assert!(
            tenant_of(&format!("idem_0a_{}", "00".repeat(32))).is_none(),
            "a control character is no tenant"
        );
    }
}
