//! Statistics: the journal each counting write appends to, its fold into the
//! rollups, the reads of both, and the recount from the tables.

use super::common::{bind_counts, queries, R};
use crate::model::Millis;
use crate::stats::{Cell, Counts, Granularity, JournalRow};

/// A rollup row.
#[derive(Debug, sqlx::FromRow)]
pub(crate) struct RollupRow {
    pub bucket_start_ms: i64,
    pub action: String,
    #[sqlx(flatten)]
    pub counts: Counts,
}

impl RollupRow {
    pub(crate) fn into_parts(self) -> (Millis, String, Counts) {
        (self.bucket_start_ms, self.action, self.counts)
    }
}

/// An admin totals row.
#[derive(Debug, sqlx::FromRow)]
pub(crate) struct TotalsRow {
    pub tenant_id: String,
    pub intents: Option<i64>,
    pub deliveries: Option<i64>,
    pub redeliveries: Option<i64>,
    pub redelivered_intents: Option<i64>,
    pub divergences: Option<i64>,
    pub actions_uncertain: Option<i64>,
}

queries! {
    statements in stats;
    /// The statistics queries, one per statement, each with its signature;
    /// [`queries!`] implements them for both backends' connections.
    pub(crate) trait StatsQueries {
        fn flush_cell(c, tenant: &str, g: Granularity, start: Millis, action: &str, cell: &Cell) -> R<()> {
            let n = &cell.counts;
            let query = sqlx::query::<Db>(q::FLUSH_ROLLUP)
                .bind(tenant)
                .bind(g.as_str())
                .bind(start)
                .bind(action);
            bind_counts!(query, n).execute(&mut *c).await?;
            for (le, count) in crate::stats::DELAY_BOUNDS_MS.iter().zip(cell.delays.iter()) {
                if *count > 0 {
                    sqlx::query::<Db>(q::FLUSH_DELAY)
                        .bind(tenant)
                        .bind(g.as_str())
                        .bind(start)
                        .bind(action)
                        .bind(*le)
                        .bind(*count)
                        .execute(&mut *c)
                        .await?;
                }
            }
            Ok(())
        }

        /// Appends one cell's counts to the journal: one row, plus one per
        /// further delay bucket its redeliveries fell in.
        fn append_journal(c, tenant: &str, minute: Millis, action: &str, cell: &Cell) -> R<()> {
            let mut delays = crate::stats::DELAY_BOUNDS_MS
                .iter()
                .zip(cell.delays.iter())
                .filter(|(_, n)| **n > 0)
                .map(|(le, n)| (Some(*le), *n));
            let first = delays.next().unwrap_or((None, 0));
            let zero = Counts::default();
            for (i, (le, count)) in std::iter::once(first).chain(delays).enumerate() {
                // The counters ride on the first row only; the rest carry delays.
                let n = if i == 0 { &cell.counts } else { &zero };
                let query = sqlx::query::<Db>(q::JOURNAL_APPEND)
                    .bind(tenant)
                    .bind(minute)
                    .bind(action);
                bind_counts!(query, n)
                    // 0: no delay bucket (SQLite's journal row key has no null).
                    .bind(le.unwrap_or(0))
                    .bind(count)
                    .execute(&mut *c)
                    .await?;
            }
            Ok(())
        }

        fn take_journal(c, tenant: &str, limit: i64) -> R<Vec<JournalRow>> {
            sqlx::query_as::<Db, JournalRow>(q::JOURNAL_TAKE)
                .bind(tenant)
                .bind(limit)
                .fetch_all(&mut *c)
                .await
        }

        /// `idem stats rebuild`, for one tenant from `since` (a day start):
        /// clears the recountable counters, then recounts them per granularity.
        fn rebuild_rollups(c, tenant: &str, since: Millis) -> R<u64> {
            let mut rows = sqlx::query::<Db>(q::REBUILD_CLEAR)
                .bind(tenant)
                .bind(since)
                .execute(&mut *c)
                .await?
                .rows_affected();
            for g in Granularity::ALL {
                for sql in [
                    q::REBUILD_INTENTS,
                    q::REBUILD_CORRECTIONS,
                    q::REBUILD_ACTIONS,
                ] {
                    rows += sqlx::query::<Db>(sql)
                        .bind(tenant)
                        .bind(since)
                        .bind(g.width_ms())
                        .bind(g.as_str())
                        .execute(&mut *c)
                        .await?
                        .rows_affected();
                }
            }
            Ok(rows)
        }

        fn read_rollup(c, tenant: &str, g: Granularity, from: Millis, to: Millis) -> R<Vec<RollupRow>> {
            sqlx::query_as::<Db, RollupRow>(q::READ_ROLLUP)
                .bind(tenant)
                .bind(g.as_str())
                .bind(from)
                .bind(to)
                .fetch_all(&mut *c)
                .await
        }

        fn read_delay(c, tenant: &str, g: Granularity, from: Millis, to: Millis) -> R<Vec<(Millis, String, Millis, i64)>> {
            let rows = sqlx::query::<Db>(q::READ_DELAY)
                .bind(tenant)
                .bind(g.as_str())
                .bind(from)
                .bind(to)
                .fetch_all(&mut *c)
                .await?;
            rows.iter()
                .map(|r| {
                    Ok((
                        r.try_get("bucket_start_ms")?,
                        r.try_get("action")?,
                        r.try_get("le_ms")?,
                        r.try_get("count")?,
                    ))
                })
                .collect()
        }

        fn admin_totals(c, g: Granularity, from: Millis, to: Millis) -> R<Vec<TotalsRow>> {
            sqlx::query_as::<Db, TotalsRow>(q::ADMIN_TOTALS)
                .bind(g.as_str())
                .bind(from)
                .bind(to)
                .fetch_all(&mut *c)
                .await
        }
    }
}
