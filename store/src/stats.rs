//! Live statistics. Every write that counts something (an intent delivery,
//! an action claimed or settled, an HTTP key replayed or refused, a lease
//! swept) appends its counts to `stats_journal` in its own transaction, so a
//! crash loses no count: what committed was counted, what rolled back was
//! not. A flusher folds the journal into per-minute, per-hour and per-day
//! rollup rows about twice a second (and before every read), deleting the
//! rows it folded in the same transaction. Reads touch the rollups only, so
//! their cost does not grow with the intent tables.

use crate::model::Millis;
use std::collections::HashMap;

/// A statistics journal row, as the flusher takes it.
#[derive(Debug, sqlx::FromRow)]
pub(crate) struct JournalRow {
    pub bucket_start_ms: i64,
    pub action: String,
    #[sqlx(flatten)]
    pub counts: Counts,
    pub delay_le_ms: Option<i64>,
    pub delay_count: i64,
}

/// Upper bounds (ms) of the redelivery-delay histogram buckets. Percentiles
/// are reported as the bound of the bucket they fall in: an upper bound,
/// which is the safe side when sizing retention.
pub const DELAY_BOUNDS_MS: [Millis; 30] = [
    1,
    2,
    5,
    10,
    20,
    50,
    100,
    200,
    500,
    1_000,
    2_000,
    5_000,
    10_000,
    30_000,
    60_000,
    120_000,
    300_000,
    600_000,
    1_800_000,
    3_600_000,
    7_200_000,
    21_600_000,
    43_200_000,
    86_400_000,
    172_800_000,
    259_200_000,
    604_800_000,
    1_209_600_000,
    2_592_000_000,
    Millis::MAX,
];

/// The counters of one bucket (the rollup table's columns, by name).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, sqlx::FromRow)]
pub struct Counts {
    /// Intents recorded for the first time.
    pub intents: i64,
    /// Deliveries (first ones and redeliveries).
    pub deliveries: i64,
    /// Redeliveries absorbed by the primary key.
    pub redeliveries: i64,
    /// Intents that got their second delivery in this bucket: the numerator
    /// of the measured duplicate rate (denominator: intents).
    pub redelivered_intents: i64,
    /// Deliveries whose candidate differed from the frozen payload.
    pub divergences: i64,
    /// Explicit corrections.
    pub corrections: i64,
    /// Action claims (first attempts, retries and takeovers).
    pub actions_started: i64,
    /// Actions completed.
    pub actions_completed: i64,
    /// Action failures (retryable and final).
    pub actions_failed: i64,
    /// Attempts whose lease ran out without an outcome.
    pub actions_uncertain: i64,
    /// HTTP responses replayed under an Idempotency-Key.
    pub http_replays: i64,
    /// HTTP 409s: the same key while its request was running.
    pub http_409: i64,
    /// HTTP 422s: the same key with a different request.
    pub http_422: i64,
    /// The longest redelivery delay seen (ms).
    pub delay_max_ms: Millis,
}

impl Counts {
    /// Only the counters no table can recount (`idem stats rebuild` keeps
    /// these): HTTP replays and refusals, and the longest delay.
    pub(crate) fn unrecountable(&self) -> Counts {
        Counts {
            http_replays: self.http_replays,
            http_409: self.http_409,
            http_422: self.http_422,
            delay_max_ms: self.delay_max_ms,
            ..Counts::default()
        }
    }

    /// Adds another bucket's counters (the longest delay is the larger).
    pub fn add(&mut self, o: &Counts) {
        self.intents += o.intents;
        self.deliveries += o.deliveries;
        self.redeliveries += o.redeliveries;
        self.redelivered_intents += o.redelivered_intents;
        self.divergences += o.divergences;
        self.corrections += o.corrections;
        self.actions_started += o.actions_started;
        self.actions_completed += o.actions_completed;
        self.actions_failed += o.actions_failed;
        self.actions_uncertain += o.actions_uncertain;
        self.http_replays += o.http_replays;
        self.http_409 += o.http_409;
        self.http_422 += o.http_422;
        self.delay_max_ms = self.delay_max_ms.max(o.delay_max_ms);
    }
}

/// One bucket's counters plus its delay histogram.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Cell {
    pub counts: Counts,
    pub delays: [i64; DELAY_BOUNDS_MS.len()],
}

impl Cell {
    pub(crate) fn add(&mut self, o: &Cell) {
        self.counts.add(&o.counts);
        for (a, b) in self.delays.iter_mut().zip(o.delays.iter()) {
            *a += b;
        }
    }

    /// Records one redelivery that came `delay` after the first delivery.
    pub(crate) fn delay(&mut self, delay: Millis) {
        let delay = delay.max(0);
        let i = DELAY_BOUNDS_MS.partition_point(|&b| b < delay);
        self.delays[i.min(DELAY_BOUNDS_MS.len() - 1)] += 1;
        self.counts.delay_max_ms = self.counts.delay_max_ms.max(delay);
    }
}

/// Counts of one transaction waiting to be journaled, or of journal rows
/// being folded,
/// by minute, tenant and action. Nested maps let the hot path look a cell up
/// with borrowed strings: no allocation unless the cell is new.
#[derive(Debug, Default)]
pub(crate) struct Accumulator {
    minutes: HashMap<Millis, HashMap<String, HashMap<String, Cell>>>,
}

pub(crate) const MINUTE: Millis = 60_000;
pub(crate) const HOUR: Millis = 3_600_000;
pub(crate) const DAY: Millis = 86_400_000;

impl Accumulator {
    /// The cell of `(tenant, action)` for the minute holding `now`.
    pub(crate) fn cell(&mut self, tenant: &str, action: &str, now: Millis) -> &mut Cell {
        let minute = now - now.rem_euclid(MINUTE);
        let tenants = self.minutes.entry(minute).or_default();
        if !tenants.contains_key(tenant) {
            tenants.insert(tenant.to_owned(), HashMap::new());
        }
        let actions = tenants.get_mut(tenant).unwrap_or_else(|| unreachable!());
        if !actions.contains_key(action) {
            actions.insert(action.to_owned(), Cell::default());
        }
        actions.get_mut(action).unwrap_or_else(|| unreachable!())
    }

    /// Adds one journal row.
    pub(crate) fn add_journal(&mut self, tenant: &str, row: &JournalRow) {
        let cell = self.cell(tenant, &row.action, row.bucket_start_ms);
        cell.counts.add(&row.counts);
        if let Some(le) = row.delay_le_ms {
            let i = DELAY_BOUNDS_MS.partition_point(|&b| b < le);
            if let Some(slot) = cell.delays.get_mut(i) {
                *slot += row.delay_count;
            }
        }
    }

    /// Every cell, by minute, tenant and action.
    pub(crate) fn cells(&self) -> impl Iterator<Item = (Millis, &str, &str, &Cell)> {
        self.minutes.iter().flat_map(|(minute, tenants)| {
            tenants.iter().flat_map(move |(tenant, actions)| {
                actions
                    .iter()
                    .map(move |(action, cell)| (*minute, tenant.as_str(), action.as_str(), cell))
            })
        })
    }

    /// The rows to write, in a fixed order: two flushers on PostgreSQL
    /// update shared rollup rows in the same order, so neither can deadlock.
    pub(crate) fn sorted_rollups(&self) -> Vec<((String, Granularity, Millis, String), Cell)> {
        let mut rows: Vec<_> = self.rollups().into_iter().collect();
        rows.sort_by(|(a, _), (b, _)| {
            (&a.0, a.1.as_str(), a.2, &a.3).cmp(&(&b.0, b.1.as_str(), b.2, &b.3))
        });
        rows
    }

    /// The rows to write: every cell added to its minute, hour and day bucket.
    pub(crate) fn rollups(&self) -> HashMap<(String, Granularity, Millis, String), Cell> {
        let mut out: HashMap<(String, Granularity, Millis, String), Cell> = HashMap::new();
        for (minute, tenants) in &self.minutes {
            for (tenant, actions) in tenants {
                for (action, cell) in actions {
                    for g in Granularity::ALL {
                        out.entry((tenant.clone(), g, g.floor(*minute), action.clone()))
                            .or_default()
                            .add(cell);
                    }
                }
            }
        }
        out
    }
}

/// The width of a statistics bucket.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Granularity {
    /// One minute (kept 2 days).
    Minute,
    /// One hour (kept 90 days).
    Hour,
    /// One day (kept 800 days).
    Day,
}

impl Granularity {
    /// All three.
    pub const ALL: [Granularity; 3] = [Self::Minute, Self::Hour, Self::Day];

    /// As stored.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Minute => "minute",
            Self::Hour => "hour",
            Self::Day => "day",
        }
    }

    /// The bucket width in ms.
    pub fn width_ms(self) -> Millis {
        match self {
            Self::Minute => MINUTE,
            Self::Hour => HOUR,
            Self::Day => DAY,
        }
    }

    /// How long buckets of this width are kept.
    pub fn retention_ms(self) -> Millis {
        match self {
            Self::Minute => 2 * DAY,
            Self::Hour => 90 * DAY,
            Self::Day => 800 * DAY,
        }
    }

    /// The start of the bucket holding `t` (UTC).
    pub fn floor(self, t: Millis) -> Millis {
        t - t.rem_euclid(self.width_ms())
    }
}

impl std::str::FromStr for Granularity {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "minute" => Ok(Self::Minute),
            "hour" => Ok(Self::Hour),
            "day" => Ok(Self::Day),
            _ => Err(format!(
                "unknown granularity {s:?}: use minute, hour or day"
            )),
        }
    }
}

/// Redelivery delay summary (ms, upper bounds of histogram buckets; `max` exact).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct Delay {
    /// Redeliveries measured.
    pub count: i64,
    /// Median delay's bucket bound.
    pub p50_ms: Option<Millis>,
    /// 99th percentile's bucket bound.
    pub p99_ms: Option<Millis>,
    /// Longest delay.
    pub max_ms: Option<Millis>,
}

impl Delay {
    pub(crate) fn from_histogram(h: &[i64; DELAY_BOUNDS_MS.len()], max: Millis) -> Self {
        let count: i64 = h.iter().sum();
        if count == 0 {
            return Self::default();
        }
        let pct = |p: i64| {
            // The smallest bucket holding at least p% of the redeliveries.
            let need = (count * p + 99) / 100;
            let mut seen = 0;
            for (i, c) in h.iter().enumerate() {
                seen += c;
                if seen >= need {
                    // The bound never exceeds the exact maximum.
                    return Some(DELAY_BOUNDS_MS[i].min(max));
                }
            }
            Some(max)
        };
        Self {
            count,
            p50_ms: pct(50),
            p99_ms: pct(99),
            max_ms: Some(max),
        }
    }
}

/// One statistics bucket for one action type.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Bucket {
    /// Bucket start (ms since epoch, UTC).
    pub start_ms: Millis,
    /// Action type (`http` for Idempotency-Key counters).
    pub action: String,
    /// Counters.
    #[serde(flatten)]
    pub counts: Counts,
    /// Redelivery delays.
    pub delay: Delay,
}

/// A tenant's statistics over a range.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Report {
    /// Bucket width.
    pub granularity: Granularity,
    /// Range start (inclusive).
    pub from_ms: Millis,
    /// Range end (exclusive).
    pub to_ms: Millis,
    /// Buckets, oldest first, one per action type that had activity.
    pub buckets: Vec<Bucket>,
    /// The sums over the range.
    pub totals: Counts,
    /// Delays over the range.
    pub delay: Delay,
    /// Intents redelivered at least once per intent recorded, in percent
    /// (absent when no intent was recorded).
    pub duplicate_rate_pct: Option<f64>,
}

/// One tenant's totals in the admin view.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct TenantTotals {
    /// Tenant.
    pub tenant: String,
    /// Intents recorded.
    pub intents: i64,
    /// Deliveries.
    pub deliveries: i64,
    /// Redeliveries absorbed.
    pub redeliveries: i64,
    /// Intents redelivered at least once.
    pub redelivered_intents: i64,
    /// Divergent deliveries.
    pub divergences: i64,
    /// Uncertain attempts.
    pub actions_uncertain: i64,
}

/// Builds a report from rollup rows and histogram rows.
pub(crate) fn report(
    granularity: Granularity,
    from_ms: Millis,
    to_ms: Millis,
    rows: Vec<(Millis, String, Counts)>,
    delays: Vec<(Millis, String, Millis, i64)>,
) -> Report {
    let mut hist: HashMap<(Millis, String), [i64; DELAY_BOUNDS_MS.len()]> = HashMap::new();
    let mut total_hist = [0i64; DELAY_BOUNDS_MS.len()];
    for (start, action, le, count) in delays {
        let i = DELAY_BOUNDS_MS.partition_point(|&b| b < le);
        if let Some(slot) = hist
            .entry((start, action))
            .or_insert([0; DELAY_BOUNDS_MS.len()])
            .get_mut(i)
        {
            *slot += count;
        }
        if let Some(slot) = total_hist.get_mut(i) {
            *slot += count;
        }
    }
    let mut totals = Counts::default();
    let buckets = rows
        .into_iter()
        .map(|(start_ms, action, counts)| {
            totals.add(&counts);
            let h = hist
                .remove(&(start_ms, action.clone()))
                .unwrap_or([0; DELAY_BOUNDS_MS.len()]);
            Bucket {
                start_ms,
                delay: Delay::from_histogram(&h, counts.delay_max_ms),
                action,
                counts,
            }
        })
        .collect();
    let duplicate_rate_pct = (totals.intents > 0)
        .then(|| totals.redelivered_intents as f64 * 100.0 / totals.intents as f64);
    Report {
        granularity,
        from_ms,
        to_ms,
        buckets,
        delay: Delay::from_histogram(&total_hist, totals.delay_max_ms),
        totals,
        duplicate_rate_pct,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_are_bucket_bounds_capped_by_the_max() {
        let mut c = Cell::default();
        for d in [3, 4, 4, 40, 90_000] {
            c.delay(d);
        }
        let d = Delay::from_histogram(&c.delays, c.counts.delay_max_ms);
        assert_eq!(d.count, 5);
        assert_eq!(d.p50_ms, Some(5));
        assert_eq!(d.p99_ms, Some(90_000)); // bucket 120 s, capped by the max
        assert_eq!(d.max_ms, Some(90_000));
        assert_eq!(Delay::from_histogram(&[0; 30], 0), Delay::default());
    }

    #[test]
    fn rollups_fold_minutes_into_hours_and_days() {
        let mut a = Accumulator::default();
        a.cell("t", "pix", 0).counts.intents += 1;
        a.cell("t", "pix", 61_000).counts.intents += 2;
        let r = a.rollups();
        assert_eq!(r.len(), 4); // two minutes, one hour, one day
        assert_eq!(
            r[&("t".into(), Granularity::Hour, 0, "pix".into())]
                .counts
                .intents,
            3
        );
        assert_eq!(
            r[&("t".into(), Granularity::Minute, 60_000, "pix".into())]
                .counts
                .intents,
            2
        );
    }
}
