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

/// How long a verified token is trusted without asking the database again.
/// Every API call authenticates; without this each would pay one more
/// round trip. Tokens are never revoked yet; when they are, revocation takes
/// effect within this long.
pub const TOKEN_CACHE_TTL: Duration = Duration::from_secs(30);
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

impl Store {
    /// Registers a tenant and returns its first API token (store only its
    /// hash). A tenant that already exists is a [`Error::Conflict`].
    #[tracing::instrument(skip(self))]
    pub async fn create_tenant(&self, tenant: &TenantId, name: &str) -> Result<ApiToken, Error> {
        let token = ApiToken(format!(
            "idem_{}_{}",
            hex::encode(tenant.as_str()),
            hex::encode(rand::random::<[u8; 32]>())
        ));
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
    /// unknown, revoked) is [`Error::NotFound`], with no hint of which.
    #[tracing::instrument(level = "debug", skip_all)]
    pub async fn authenticate(&self, token: &str) -> Result<TenantId, Error> {
        let tenant = tenant_of(token).ok_or(Error::NotFound)?;
        let h = hash(token);
        if let Some(t) = self.inner.tokens.get(&h) {
            return Ok(t);
        }
        let mut s = self.session().await?;
        if on!(s.find_token(tenant.as_str(), &h))? {
            self.inner.tokens.put(vec![(h, tenant.clone())]);
            Ok(tenant)
        } else {
            Err(Error::NotFound)
        }
    }
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
