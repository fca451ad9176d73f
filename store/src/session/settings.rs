//! Per-tenant settings: retention.

use super::*;

impl Session {
    /// The tenant's retention (the defaults when never set).
    pub async fn retention(&mut self, tenant: &TenantId) -> Result<Retention, Error> {
        let row = on!(self.select_retention(tenant.as_str()))?;
        Ok(row.map_or_else(Retention::default, |r| Retention {
            intent_ms: r.intent_retention_ms,
            action_ms: r.action_retention_ms,
            http_ms: r.http_retention_ms,
        }))
    }

    /// Sets the tenant's retention. Every period must be positive.
    pub async fn set_retention(&mut self, tenant: &TenantId, r: &Retention) -> Result<(), Error> {
        if r.intent_ms <= 0 || r.action_ms <= 0 || r.http_ms <= 0 {
            return Err(Error::Invalid("retention periods must be positive".into()));
        }
        on!(self.upsert_retention(tenant.as_str(), r))?;
        Ok(())
    }
}
