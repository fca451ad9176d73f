//! The demo payment provider's ledger. Not part of the intent store's
//! promise: an application table that shares the store's transactions so
//! the demo can show a local effect committing with its key.

use super::*;

impl Session {
    /// Writes a charge the demo provider executed. Call it inside the
    /// transaction the Idempotency-Key guard hands the handler, so the charge
    /// commits with the stored response or not at all.
    pub async fn demo_charge(
        &mut self,
        tenant: &TenantId,
        charge: &DemoCharge,
    ) -> Result<(), Error> {
        on!(self.insert_demo_charge(tenant.as_str(), charge))?;
        Ok(())
    }

    /// How many charges the demo provider executed for the tenant.
    pub async fn demo_charge_count(&mut self, tenant: &TenantId) -> Result<i64, Error> {
        Ok(on!(self.count_demo_charges(tenant.as_str()))?)
    }

    /// Every charge the demo provider executed for the tenant, oldest first.
    pub async fn demo_charges(&mut self, tenant: &TenantId) -> Result<Vec<DemoCharge>, Error> {
        Ok(on!(self.list_demo_charges(tenant.as_str()))?)
    }

    /// The conformance fixture's echo: records one execution (the handler's
    /// own commit; in the guard's transaction when behind the layer).
    pub async fn fixture_echo(&mut self, tenant: &TenantId, bytes: usize) -> Result<(), Error> {
        let now = self.now();
        let bytes = i64::try_from(bytes).unwrap_or(i64::MAX);
        Ok(on!(self.insert_fixture_echo(tenant.as_str(), bytes, now))?)
    }
}
