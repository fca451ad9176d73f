//! What the live monitor reads beside the statistics rollups.

use super::*;
use crate::facts::Facts;
use std::collections::HashMap;

impl Session {
    /// A tenant's statistics as last flushed (see [`Store::stats`], which
    /// flushes this process's counts first). The live monitor flushes once
    /// and then reads every tenant with this.
    pub async fn stats(
        &mut self,
        tenant: &TenantId,
        granularity: crate::stats::Granularity,
        from_ms: Millis,
        to_ms: Millis,
    ) -> Result<crate::stats::Report, Error> {
        let from = granularity.floor(from_ms);
        let t = tenant.as_str();
        let rows = on!(self.read_rollup(t, granularity, from, to_ms))?;
        let delays = on!(self.read_delay(t, granularity, from, to_ms))?;
        Ok(crate::stats::report(
            granularity,
            from,
            to_ms,
            rows.into_iter()
                .map(crate::backend::RollupRow::into_parts)
                .collect(),
            delays,
        ))
    }

    /// The tenant's actions as they stand at `now`: in flight, uncertain
    /// (including leases that ran out and are not swept yet), and the newest
    /// `limit` uncertain keys.
    pub async fn live_actions(
        &mut self,
        tenant: &TenantId,
        now: Millis,
        limit: u32,
    ) -> Result<LiveActions, Error> {
        let t = tenant.as_str();
        let (in_flight, expired, uncertain, unresolved, oldest_unresolved_ms) =
            on!(self.live_action_counts(t, now))?;
        let limit = i64::from(limit);
        // The lists are read only when the counts say there is something
        // to list: most tenants have nothing uncertain, and the monitor
        // reads every tenant every half second.
        let mut rows: Vec<(bool, crate::backend::UncertainRow)> = Vec::new();
        let mut by_action = Vec::new();
        let mut uncertain_now = expired + uncertain;
        if uncertain_now > 0 {
            // The card shows the sum of the per-action counts, read in one
            // statement, so card and table agree even while leases run out.
            by_action = on!(self.live_uncertain_by_action(t, now))?;
            uncertain_now = by_action.iter().map(|(_, n)| n).sum();
        }
        if expired > 0 {
            rows.extend(
                on!(self.live_expired(t, now, limit))?
                    .into_iter()
                    .map(|r| (true, r)),
            );
        }
        if uncertain > 0 {
            rows.extend(
                on!(self.live_uncertain(t, limit))?
                    .into_iter()
                    .map(|r| (false, r)),
            );
        }
        // Newest first: an expired lease's moment is its end; a swept one's
        // is when the sweep marked it.
        rows.sort_by_key(|(expired, r)| {
            std::cmp::Reverse(if *expired {
                r.lease_until_ms.unwrap_or(r.updated_ms)
            } else {
                r.updated_ms
            })
        });
        rows.truncate(usize::try_from(limit).unwrap_or(usize::MAX));
        let mut facts = self
            .listed_facts(t, rows.iter().map(|(_, r)| r.idem_key.as_str()))
            .await?;
        Ok(LiveActions {
            in_flight,
            uncertain: uncertain_now,
            uncertain_by_action: by_action,
            unresolved,
            oldest_unresolved_ms,
            uncertain_keys: rows
                .into_iter()
                .map(|(expired, r)| {
                    let (reference, payload) = facts
                        .remove(&r.idem_key)
                        .map_or((None, None), |f| (Some(f.reference), Some(f.payload)));
                    UncertainAction {
                        key: r.idem_key,
                        action: r.action,
                        started_ms: r.started_ms,
                        lease_until_ms: r.lease_until_ms,
                        attempts: r.attempts,
                        lease_expired_unswept: expired,
                        reference,
                        payload,
                    }
                })
                .collect(),
        })
    }

    /// The intents of the listed keys, from what the monitor kept
    /// ([`crate::facts`]) and, for the rest, one read for all of them.
    async fn listed_facts<'k>(
        &mut self,
        tenant: &str,
        keys: impl Iterator<Item = &'k str>,
    ) -> Result<HashMap<String, Facts>, Error> {
        let mut found = HashMap::new();
        let mut missing = Vec::new();
        for key in keys {
            match self.store.inner.facts.get(tenant, key) {
                Some(Some(f)) => {
                    found.insert(key.to_owned(), f);
                }
                Some(None) => {}
                None => missing.push(key),
            }
        }
        if missing.is_empty() {
            return Ok(found);
        }
        // Several rows for a key only after a correction: the newest wins.
        let mut newest: HashMap<String, (i64, Facts)> = HashMap::new();
        for row in on!(self.intent_facts(tenant, &missing))? {
            if newest
                .get(&row.idem_key)
                .is_none_or(|(seen, _)| row.last_seen_ms > *seen)
            {
                let f = Facts {
                    reference: row.reference,
                    payload: row.payload,
                };
                newest.insert(row.idem_key, (row.last_seen_ms, f));
            }
        }
        let answers = missing
            .iter()
            .map(|k| ((*k).to_owned(), newest.get(*k).map(|(_, f)| f.clone())))
            .collect();
        self.store.inner.facts.put(tenant, answers);
        found.extend(newest.into_iter().map(|(k, (_, f))| (k, f)));
        Ok(found)
    }
}
