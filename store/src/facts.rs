//! What the live monitor shows of an uncertain key's intent (its business
//! reference and frozen payload), kept once read.
//!
//! Finding an intent by its key needs an index on a random 64-hex string,
//! and on SQLite that index cost a third of `record_intent`'s throughput
//! (docs/PERFORMANCE.md), so SQLite has none and reads the tenant's
//! intents once per lookup. The monitor lists the same keys every half
//! second; keeping each answer for a while makes that one read per key (and
//! per minute), not one per refresh. Keys without an intent are kept too, so
//! an actions-only tenant is not read again and again.

use crate::expiring::Expiring;
use std::time::Duration;

/// How long an answer is kept. A correction that keeps the key (it changed
/// only fields the key does not cover) shows in the list after at most this
/// long; the action's own page always reads the intent afresh.
const FACTS_TTL: Duration = Duration::from_secs(60);

/// At most this many answers are kept.
const FACTS_CAP: usize = 10_000;

/// An intent's reference and frozen payload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Facts {
    pub reference: String,
    pub payload: String,
}

/// The answers by tenant and key; `None` is "no intent has this key".
pub(crate) struct FactsCache(Expiring<Option<Facts>>);

/// One map for every tenant: tenant ids hold no control characters, so a
/// newline keeps two tenants' keys apart.
fn slot(tenant: &str, key: &str) -> String {
    format!("{tenant}\n{key}")
}

impl FactsCache {
    pub(crate) fn new() -> Self {
        Self(Expiring::new(FACTS_TTL, FACTS_CAP))
    }

    /// The kept answer for a key: `Some(None)` when it has no intent,
    /// `None` when it must be read.
    pub(crate) fn get(&self, tenant: &str, key: &str) -> Option<Option<Facts>> {
        self.0.get(&slot(tenant, key))
    }

    /// Keeps the answers just read for a tenant's keys.
    pub(crate) fn put(&self, tenant: &str, answers: Vec<(String, Option<Facts>)>) {
        self.0.put(
            answers
                .into_iter()
                .map(|(key, facts)| (slot(tenant, &key), facts))
                .collect(),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_kept_per_tenant_misses_included() {
        let facts = |r: &str| {
            Some(Facts {
                reference: r.into(),
                payload: "{}".into(),
            })
        };
        let cache = FactsCache::new();
        assert_eq!(cache.get("t1", "k"), None);
        cache.put("t1", vec![("k".into(), facts("r1")), ("n".into(), None)]);
        assert_eq!(cache.get("t1", "k"), Some(facts("r1")));
        assert_eq!(cache.get("t1", "n"), Some(None));
        assert_eq!(
            cache.get("t2", "k"),
            None,
            "another tenant's key is its own"
        );
    }
}
