//! Scenarios and comparisons saved from the dashboard. Not part of the intent store's
//! promise: the dashboard's own table, kept under its own tenant.

use super::*;

impl Session {
    /// Saves a scenario under its content-derived id and returns the stored
    /// row. Saving the same scenario again returns the first save (its
    /// `created_ms` included); an id that already names *different*
    /// content is a [`Error::Conflict`] and changes nothing.
    pub async fn save_scenario(
        &mut self,
        tenant: &TenantId,
        scenario: &SavedScenario,
    ) -> Result<SavedScenario, Error> {
        on!(self.insert_scenario(tenant.as_str(), scenario))?;
        let stored =
            on!(self.select_scenario(tenant.as_str(), &scenario.id))?.ok_or(Error::NotFound)?;
        if stored.query != scenario.query || stored.name != scenario.name {
            return Err(Error::ScenarioIdTaken(scenario.id.clone()));
        }
        Ok(stored)
    }

    /// A saved scenario, if the tenant has one with that id.
    pub async fn scenario(
        &mut self,
        tenant: &TenantId,
        id: &str,
    ) -> Result<Option<SavedScenario>, Error> {
        Ok(on!(self.select_scenario(tenant.as_str(), id))?)
    }

    /// Saves a comparison under its content-derived id and returns the
    /// stored row, with the same rules as [`save_scenario`](Self::save_scenario).
    pub async fn save_comparison(
        &mut self,
        tenant: &TenantId,
        comparison: &SavedComparison,
    ) -> Result<SavedComparison, Error> {
        on!(self.insert_comparison(tenant.as_str(), comparison))?;
        let stored =
            on!(self.select_comparison(tenant.as_str(), &comparison.id))?.ok_or(Error::NotFound)?;
        if stored.query != comparison.query || stored.name != comparison.name {
            return Err(Error::ScenarioIdTaken(comparison.id.clone()));
        }
        Ok(stored)
    }

    /// A saved comparison, if the tenant has one with that id.
    pub async fn comparison(
        &mut self,
        tenant: &TenantId,
        id: &str,
    ) -> Result<Option<SavedComparison>, Error> {
        Ok(on!(self.select_comparison(tenant.as_str(), id))?)
    }
}
