//! Alerts, evaluated by `idem serve`: per tenant, a threshold on one of the
//! live monitor's numbers (`idem alert add TENANT --metric uncertain_now
//! --above 0 --for 5m --webhook ENDPOINT_ID`). Each evaluation reads the same
//! numbers `/live` shows; an alert whose number stays above its threshold
//! for `--for` fires, and resolves when the number is back at or under it.
//! Firing and resolving are announced as `alert.firing` and
//! `alert.resolved` webhooks to the alert's endpoint, queued in the same
//! transaction as the change, so the outbox relay signs, sends and retries
//! them like any other message.

use idem_core::TenantId;
use idem_store::stats::Granularity;
use idem_store::AlertState;
use idem_store::{Alert, AlertEvaluation, Store};
use rust_decimal::Decimal;
use std::str::FromStr;

/// The numbers an alert can watch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Metric {
    /// Actions whose outcome is unknown now (the monitor's one definition).
    UncertainNow,
    /// Intents redelivered at least once, per 100 intents, over the window.
    DuplicateRatePct,
    /// Redeliveries whose candidate differed from the frozen payload, over
    /// the window.
    Divergences,
}

impl Metric {
    /// Every metric's name, as `--metric` takes it.
    pub const NAMES: [&'static str; 3] = ["uncertain_now", "duplicate_rate_pct", "divergences"];

    /// The metric a name names.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "uncertain_now" => Some(Self::UncertainNow),
            "duplicate_rate_pct" => Some(Self::DuplicateRatePct),
            "divergences" => Some(Self::Divergences),
            _ => None,
        }
    }
}

/// Where an alert goes from its state and what the number is now.
/// `above`: the number is over the threshold. Returns the new state, the
/// new `since`, and the announcement's topic when it fires or resolves.
pub fn next(
    state: AlertState,
    since: Option<i64>,
    above: bool,
    for_ms: i64,
    now: i64,
) -> (AlertState, Option<i64>, Option<&'static str>) {
    use AlertState::{Firing, Ok, Pending};
    match (state, above) {
        (Firing, true) => (Firing, since, None),
        (Firing, false) => (Ok, None, Some("alert.resolved")),
        (_, false) => (Ok, None, None),
        (s, true) => {
            let since = match (s, since) {
                (Pending, Some(t)) => t,
                _ => now,
            };
            if now - since >= for_ms {
                (Firing, Some(since), Some("alert.firing"))
            } else {
                (Pending, Some(since), None)
            }
        }
    }
}

/// The number an alert watches, for one tenant now (`None`: nothing to
/// measure, such as a rate over a window without intents).
async fn value(
    store: &Store,
    tenant: &TenantId,
    a: &Alert,
    now: i64,
) -> Result<Option<Decimal>, idem_store::Error> {
    Ok(match Metric::parse(&a.metric) {
        Some(Metric::UncertainNow) => {
            let live = store.session().await?.live_actions(tenant, now, 0).await?;
            Some(Decimal::from(live.uncertain))
        }
        Some(m) => {
            // Minute buckets for windows up to a day (what they keep), hour
            // buckets beyond.
            let g = if a.window_ms <= 86_400_000 {
                Granularity::Minute
            } else {
                Granularity::Hour
            };
            let r = store.stats(tenant, g, now - a.window_ms, now + 1).await?;
            let (mut intents, mut twice, mut divergences) = (0i64, 0i64, 0i64);
            for b in &r.buckets {
                intents += b.counts.intents;
                twice += b.counts.redelivered_intents;
                divergences += b.counts.divergences;
            }
            match m {
                Metric::Divergences => Some(Decimal::from(divergences)),
                _ if intents == 0 => None,
                _ => Some(Decimal::from(twice) * Decimal::from(100) / Decimal::from(intents)),
            }
        }
        None => None,
    })
}

/// One evaluation of every tenant's alerts. Returns how many fired or
/// resolved.
#[tracing::instrument(level = "debug", skip_all)]
pub async fn evaluate(store: &Store) -> Result<usize, idem_store::Error> {
    let mut announced = 0;
    for tenant in store.alert_tenants().await? {
        let alerts = store.session().await?.alerts(&tenant).await?;
        for a in alerts {
            let now = store.now_ms();
            let v = value(store, &tenant, &a, now).await?;
            let threshold = Decimal::from_str(&a.above).unwrap_or(Decimal::MAX);
            let over = v.is_some_and(|v| v > threshold);
            let (state, since, topic) = next(a.state, a.since_ms, over, a.for_ms, now);
            let shown = v.map(|v| idem_core::scenario::canonical(v).to_string());
            if state == a.state && since == a.since_ms && shown == a.last_value {
                continue;
            }
            let to = AlertEvaluation {
                state,
                since_ms: since,
                value: shown.as_deref(),
            };
            let payload = topic.map(|t| {
                serde_json::json!({
                    "alert_id": a.alert_id,
                    "tenant": tenant.as_str(),
                    "state": if t == "alert.firing" { "firing" } else { "resolved" },
                    "metric": a.metric,
                    "above": a.above,
                    "value": shown,
                    "for_ms": a.for_ms,
                    "window_ms": a.window_ms,
                    "since_ms": a.since_ms.or(since),
                    "at_ms": now,
                })
                .to_string()
            });
            let mut tx = store.transaction().await?;
            let moved = tx
                .record_alert(&tenant, &a, &to, topic.zip(payload.as_deref()))
                .await?;
            tx.commit().await?;
            if moved && topic.is_some() {
                tracing::info!(tenant = %tenant, alert = %a.alert_id, state = state.as_str(), "alert {}", topic.unwrap_or_default());
                announced += 1;
            }
        }
    }
    Ok(announced)
}

#[cfg(test)]
mod tests {
    use super::next;
    use idem_store::AlertState::{Firing, Ok, Pending};

    #[test]
    fn an_alert_fires_after_its_hold_and_resolves_when_back_under() {
        // Above for the first time: pending, since now.
        assert_eq!(
            next(Ok, None, true, 300, 1_000),
            (Pending, Some(1_000), None)
        );
        // Still above, not long enough.
        assert_eq!(
            next(Pending, Some(1_000), true, 300, 1_200),
            (Pending, Some(1_000), None)
        );
        // Long enough: fires, keeping when it went above.
        assert_eq!(
            next(Pending, Some(1_000), true, 300, 1_300),
            (Firing, Some(1_000), Some("alert.firing"))
        );
        assert_eq!(
            next(Firing, Some(1_000), true, 300, 9_000),
            (Firing, Some(1_000), None)
        );
        // Back under: resolves once; a pending one just goes back to ok.
        assert_eq!(
            next(Firing, Some(1_000), false, 300, 9_500),
            (Ok, None, Some("alert.resolved"))
        );
        assert_eq!(
            next(Pending, Some(1_000), false, 300, 1_100),
            (Ok, None, None)
        );
        assert_eq!(next(Ok, None, false, 300, 1_100), (Ok, None, None));
        // No hold: fires at once.
        assert_eq!(
            next(Ok, None, true, 0, 5),
            (Firing, Some(5), Some("alert.firing"))
        );
    }
}
