//! The saved scenarios and comparisons, read for the pages that show them
//! (the calculator, the comparison, the charts): one leaf both the
//! calculator's pages and the charts read, so neither imports the other.

use super::compare::PageComparison;
use app::SavedView;
use idem_core::TenantId;
use idem_store::Store;

/// The tenant that owns scenarios saved from the dashboard. Every statement
/// stays tenant-scoped; the dashboard is one more tenant of the store (and
/// the live monitor leaves it out of its tenant list).
pub const SCENARIO_TENANT: &str = "_dashboard";

/// The dashboard's tenant, which owns every saved scenario and comparison.
pub(crate) fn tenant() -> TenantId {
    // A constant that satisfies TenantId's rules (non-empty, no control
    // characters, no surrounding whitespace); a unit test proves it parses.
    TenantId::try_from(SCENARIO_TENANT).unwrap_or_else(|_| unreachable!("constant tenant id"))
}

/// A saved comparison; `Err` when the database cannot be read (logged).
#[tracing::instrument(level = "debug", skip(store))]
pub(crate) async fn load_comparison(store: &Store, id: &str) -> Result<Option<PageComparison>, ()> {
    if !idem_core::scenario::is_saved_id(id) {
        return Ok(None);
    }
    let read = async {
        let mut s = store.session().await?;
        s.comparison(&tenant(), id).await
    }
    .await;
    match read {
        Ok(c) => Ok(c.map(|c| PageComparison {
            id: c.id,
            name: c.name,
            query: c.query,
            created_ms: c.created_ms,
        })),
        Err(e) => {
            tracing::error!(error = %idem_api::error::chain(&e), "cannot read a saved comparison");
            Err(())
        }
    }
}

#[tracing::instrument(level = "debug", skip(store))]
pub(crate) async fn load(store: &Store, ids: Vec<String>) -> Result<Vec<SavedView>, String> {
    // Nothing to read (a comparison of links only) needs no connection, so
    // such a page still works while the database is away.
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let tenant = tenant();
    let mut session = store.session().await.map_err(|e| {
        tracing::error!(error = %idem_api::error::chain(&e), "cannot read saved scenarios");
        "database unavailable".to_owned()
    })?;
    let mut found = Vec::with_capacity(ids.len());
    for id in ids {
        match session.scenario(&tenant, &id).await {
            Ok(Some(s)) => found.push(SavedView {
                id: s.id,
                name: s.name,
                query: s.query,
                created_ms: s.created_ms,
            }),
            Ok(None) => {}
            Err(e) => {
                tracing::error!(error = %idem_api::error::chain(&e), "cannot read a saved scenario");
                return Err("database unavailable".to_owned());
            }
        }
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_scenario_tenant_is_a_valid_tenant_id() {
        assert_eq!(tenant().as_str(), SCENARIO_TENANT);
    }
}
