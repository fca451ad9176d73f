//! A small map whose entries expire: what the store remembers of answers
//! the database gave (verified API tokens, the intents of keys the monitor
//! lists), so a hot read does not ask again for a while.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Answers by key, each trusted for `ttl` after it was put; at most `cap`
/// of them (past it, expired ones go first, then all: a dropped answer
/// costs one more read, nothing else).
pub(crate) struct Expiring<V> {
    map: Mutex<HashMap<String, (V, Instant)>>,
    ttl: Duration,
    cap: usize,
}

impl<V: Clone> Expiring<V> {
    pub(crate) fn new(ttl: Duration, cap: usize) -> Self {
        Self {
            map: Mutex::new(HashMap::new()),
            ttl,
            cap,
        }
    }

    /// The answer for `key`, while it is fresh.
    pub(crate) fn get(&self, key: &str) -> Option<V> {
        let map = self.map.lock().unwrap_or_else(|p| p.into_inner());
        map.get(key)
            .filter(|(_, at)| at.elapsed() < self.ttl)
            .map(|(v, _)| v.clone())
    }

    /// Keeps answers just read.
    pub(crate) fn put(&self, answers: Vec<(String, V)>) {
        let mut map = self.map.lock().unwrap_or_else(|p| p.into_inner());
        if map.len() + answers.len() > self.cap {
            map.retain(|_, (_, at)| at.elapsed() < self.ttl);
            if map.len() + answers.len() > self.cap {
                map.clear();
            }
        }
        let now = Instant::now();
        map.extend(answers.into_iter().map(|(k, v)| (k, (v, now))));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_kept_until_they_expire() {
        let kept = Expiring::new(Duration::from_secs(60), 10);
        assert_eq!(kept.get("a"), None);
        kept.put(vec![("a".into(), 1), ("b".into(), 2)]);
        assert_eq!((kept.get("a"), kept.get("b")), (Some(1), Some(2)));
        let gone = Expiring::new(Duration::ZERO, 10);
        gone.put(vec![("a".into(), 1)]);
        assert_eq!(gone.get("a"), None, "expired at once");
    }

    #[test]
    fn the_cap_holds() {
        let kept = Expiring::new(Duration::from_secs(60), 100);
        for i in 0..105 {
            kept.put(vec![(format!("k{i}"), ())]);
        }
        let len = kept.map.lock().unwrap().len();
        assert!(len <= 100, "{len}");
        assert_eq!(kept.get("k104"), Some(()), "the newest is kept");
    }
}
