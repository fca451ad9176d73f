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

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How long an answer is kept. A correction that keeps the key (it changed
/// only fields the key does not cover) shows in the list after at most this
/// long; the action's own page always reads the intent afresh.
pub(crate) const FACTS_TTL: Duration = Duration::from_secs(60);

/// At most this many answers are kept; past it, stale ones go first, then
/// all (a cleared key costs one more read, nothing else).
const FACTS_CAP: usize = 10_000;

/// An intent's reference and frozen payload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Facts {
    pub reference: String,
    pub payload: String,
}

type Answer = (Option<Facts>, Instant);

/// A tenant's answers, by key.
type ByKey = HashMap<String, Answer>;

/// Answers by tenant, with how many there are in all.
#[derive(Default)]
pub(crate) struct FactsCache(Mutex<(usize, HashMap<String, ByKey>)>);

impl FactsCache {
    /// The kept answer for a key: `Some(None)` when it has no intent,
    /// `None` when it must be read.
    pub(crate) fn get(&self, tenant: &str, key: &str) -> Option<Option<Facts>> {
        let guard = self.0.lock().unwrap_or_else(|p| p.into_inner());
        guard
            .1
            .get(tenant)
            .and_then(|keys| keys.get(key))
            .filter(|(_, at)| at.elapsed() < FACTS_TTL)
            .map(|(facts, _)| facts.clone())
    }

    /// Keeps the answers just read for a tenant's keys.
    pub(crate) fn put(&self, tenant: &str, answers: Vec<(String, Option<Facts>)>) {
        let mut guard = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let (len, map) = &mut *guard;
        if *len + answers.len() > FACTS_CAP {
            for keys in map.values_mut() {
                keys.retain(|_, (_, at)| at.elapsed() < FACTS_TTL);
            }
            map.retain(|_, keys| !keys.is_empty());
            *len = map.values().map(HashMap::len).sum();
            if *len + answers.len() > FACTS_CAP {
                map.clear();
                *len = 0;
            }
        }
        let now = Instant::now();
        let keys = map.entry(tenant.to_owned()).or_default();
        for (key, facts) in answers {
            if keys.insert(key, (facts, now)).is_none() {
                *len += 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts(r: &str) -> Option<Facts> {
        Some(Facts {
            reference: r.into(),
            payload: "{}".into(),
        })
    }

    #[test]
    fn answers_are_kept_per_tenant_misses_included() {
        let cache = FactsCache::default();
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

    #[test]
    fn the_cap_holds() {
        let cache = FactsCache::default();
        for i in 0..FACTS_CAP + 5 {
            cache.put("t", vec![(format!("k{i}"), None)]);
        }
        let guard = cache.0.lock().unwrap();
        assert!(guard.0 <= FACTS_CAP, "{}", guard.0);
        assert_eq!(guard.0, guard.1.values().map(HashMap::len).sum::<usize>());
    }
}
