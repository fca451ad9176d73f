//! [`Session`]: every store operation, on a pooled connection (each call
//! commits on its own) or inside a transaction the caller commits.

use crate::backend::{ActionRow, BeginRow, HistoryRow, IntentRow, IntentWrite};
use crate::clock::duration_ms;
use crate::model::*;
use crate::stats::{Accumulator, Cell};
use crate::{Error, Store};
use idem_core::{ActionType, IdempotencyKey, NormalizedPayload, Payload, RulesVersion, TenantId};
use sqlx::pool::PoolConnection;
use sqlx::{PgConnection, Postgres, Sqlite, SqliteConnection, Transaction};
use std::time::Duration;

/// The connection a session runs on.
enum Inner {
    SqliteConn(PoolConnection<Sqlite>),
    SqliteTx(Transaction<'static, Sqlite>),
    PgConn(PoolConnection<Postgres>),
    PgTx(Transaction<'static, Postgres>),
}

/// A borrowed connection of either backend.
pub(crate) enum Exec<'a> {
    Sqlite(&'a mut SqliteConnection),
    Pg(&'a mut PgConnection),
}

/// Runs one backend function on whichever backend the session holds.
macro_rules! on {
    ($self:ident . $f:ident ( $($arg:expr),* $(,)? )) => {
        match $self.exec() {
            $crate::session::Exec::Sqlite(c) => $crate::backend::sqlite::$f(c, $($arg),*).await,
            $crate::session::Exec::Pg(c) => $crate::backend::pg::$f(c, $($arg),*).await,
        }
    };
}
pub(crate) use on;

/// A connection to the store, alone or inside a transaction.
///
/// Outside a transaction ([`Store::session`]) every call commits on its own.
/// Inside one ([`Store::transaction`]) nothing is visible to others, and the
/// statistics it produced are not counted, until [`commit`](Self::commit);
/// dropping the session rolls it back.
pub struct Session {
    inner: Inner,
    store: Store,
    /// Statistics of an open transaction, counted on commit.
    pending: Option<Accumulator>,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("transaction", &self.pending.is_some())
            .finish_non_exhaustive()
    }
}

impl Session {
    pub(crate) async fn open(store: &Store, transaction: bool) -> Result<Self, Error> {
        let inner = match (&store.inner.db, transaction) {
            (crate::Db::Sqlite(p), false) => Inner::SqliteConn(p.acquire().await?),
            // IMMEDIATE takes the write lock up front: a deferred transaction
            // that reads and then writes can fail with SQLITE_BUSY when another
            // writer got in between, and the busy timeout does not cover that.
            (crate::Db::Sqlite(p), true) => Inner::SqliteTx(p.begin_with("begin immediate").await?),
            (crate::Db::Postgres(p), false) => Inner::PgConn(p.acquire().await?),
            (crate::Db::Postgres(p), true) => Inner::PgTx(p.begin().await?),
        };
        Ok(Self {
            inner,
            store: store.clone(),
            pending: transaction.then(Accumulator::default),
        })
    }

    pub(crate) fn exec(&mut self) -> Exec<'_> {
        match &mut self.inner {
            Inner::SqliteConn(c) => Exec::Sqlite(c),
            Inner::SqliteTx(t) => Exec::Sqlite(t),
            Inner::PgConn(c) => Exec::Pg(c),
            Inner::PgTx(t) => Exec::Pg(t),
        }
    }

    fn now(&self) -> Millis {
        self.store.inner.clock.now_ms()
    }

    /// Counts into the transaction's pending statistics, or straight into the
    /// store's accumulator outside a transaction.
    fn note(&mut self, tenant: &TenantId, action: &str, f: impl FnOnce(&mut Cell)) {
        let now = self.now();
        match &mut self.pending {
            Some(acc) => f(acc.cell(tenant.as_str(), action, now)),
            None => self.store.count(tenant.as_str(), action, now, f),
        }
    }

    /// Commits the transaction (a no-op outside one) and counts its statistics.
    #[tracing::instrument(level = "debug", skip_all)]
    pub async fn commit(self) -> Result<(), Error> {
        match self.inner {
            Inner::SqliteTx(t) => t.commit().await?,
            Inner::PgTx(t) => t.commit().await?,
            Inner::SqliteConn(_) | Inner::PgConn(_) => {}
        }
        if let Some(acc) = self.pending {
            self.store.merge_counts(acc);
        }
        Ok(())
    }

    /// Rolls the transaction back (a no-op outside one).
    pub async fn rollback(self) -> Result<(), Error> {
        match self.inner {
            Inner::SqliteTx(t) => t.rollback().await?,
            Inner::PgTx(t) => t.rollback().await?,
            Inner::SqliteConn(_) | Inner::PgConn(_) => {}
        }
        Ok(())
    }

    // ---- intents -------------------------------------------------------

    /// Records a delivery of an intent: normalizes the candidate with its
    /// action's rules, derives the key, and in one statement inserts it or,
    /// when the intent exists, counts the delivery and leaves the frozen
    /// payload and key as the first write left them.
    #[tracing::instrument(level = "debug", skip_all, fields(tenant = %tenant, action))]
    pub async fn record_intent(
        &mut self,
        tenant: &TenantId,
        action: &str,
        payload: &Payload<'_>,
    ) -> Result<RecordedIntent, Error> {
        let candidate = self.store.derive(tenant, action, payload)?;
        let json = candidate.payload.to_json();
        let write = candidate.write_parts(tenant, action, &json);
        let now = self.now();
        let row = on!(self.record_intent(&write, 1, now))?;
        let recorded = candidate.recorded(row, &json, 1)?;
        self.note(tenant, action, |c| count_delivery(c, &recorded, now));
        Ok(recorded)
    }

    /// The intent as stored, without counting a delivery.
    #[tracing::instrument(level = "debug", skip_all, fields(tenant = %tenant, action))]
    pub async fn intent(
        &mut self,
        tenant: &TenantId,
        action: &str,
        reference: &str,
    ) -> Result<Intent, Error> {
        let row = on!(self.select_intent(tenant.as_str(), reference, action))?;
        row.ok_or(Error::NotFound)?.try_into()
    }

    /// Replaces the frozen payload of an existing intent with a corrected
    /// one (a person fixed the amount), derives the new key, and files the
    /// previous version in the history. A redelivery can never do this.
    #[tracing::instrument(level = "debug", skip_all, fields(tenant = %tenant, action))]
    pub async fn correct_intent(
        &mut self,
        tenant: &TenantId,
        action: &str,
        payload: &Payload<'_>,
        reason: &str,
    ) -> Result<Corrected, Error> {
        let candidate = self.store.derive(tenant, action, payload)?;
        let json = candidate.payload.to_json();
        let write = candidate.write_parts(tenant, action, &json);
        let now = self.now();
        let archived = on!(self.archive_intent(&write, now, reason)).map_err(conflict_on_unique)?;
        if archived == 0 {
            // Unchanged or absent: the archive statement writes only when the
            // payload differs.
            let intent = self.intent(tenant, action, &candidate.reference).await?;
            return Ok(Corrected {
                intent,
                changed: false,
            });
        }
        let row = on!(self.replace_intent(&write, now))?.ok_or(Error::NotFound)?;
        self.note(tenant, action, |c| c.counts.corrections += 1);
        Ok(Corrected {
            intent: row.try_into()?,
            changed: true,
        })
    }

    /// The versions corrections replaced, oldest first.
    pub async fn intent_history(
        &mut self,
        tenant: &TenantId,
        action: &str,
        reference: &str,
    ) -> Result<Vec<IntentVersion>, Error> {
        let rows = on!(self.intent_history(tenant.as_str(), reference, action))?;
        rows.into_iter().map(IntentVersion::try_from).collect()
    }

    // ---- actions -------------------------------------------------------

    /// Claims the action `key` for `lease`, or says why not (see [`Begin`]).
    #[tracing::instrument(level = "debug", skip_all, fields(tenant = %tenant, action = %action))]
    pub async fn begin_action(
        &mut self,
        tenant: &TenantId,
        action: &ActionType,
        key: &IdempotencyKey,
        lease: Duration,
    ) -> Result<Begin, Error> {
        // A claim can race with a lease running out between the upsert and
        // the read that explains a refusal; a second round settles it.
        for _ in 0..3 {
            let now = self.now();
            let until = now.saturating_add(duration_ms(lease));
            let t = tenant.as_str();
            let k = key.as_str();
            if let Some(row) = on!(self.begin_action(t, k, action.as_str(), now, until))? {
                let begin = claimed(row)?;
                self.note(tenant, action.as_str(), |c| {
                    c.counts.actions_started += 1;
                    if let Begin::Uncertain { previous, .. } = &begin {
                        // Swept attempts were counted when swept.
                        if previous.lease_until_ms.is_some() {
                            c.counts.actions_uncertain += 1;
                        }
                    }
                });
                return Ok(begin);
            }
            let row = on!(self.select_action(t, k))?.ok_or(Error::NotFound)?;
            match (row.state.as_str(), row.lease_until_ms) {
                ("completed", _) => {
                    return Ok(Begin::Completed {
                        response: row.response.unwrap_or_default(),
                    })
                }
                ("failed", _) if row.retryable != Some(true) => {
                    return Ok(Begin::Failed {
                        error: row.error.unwrap_or_default(),
                    })
                }
                ("started" | "uncertain", Some(until)) if until > now => {
                    return Ok(Begin::InFlight {
                        lease_until_ms: until,
                    })
                }
                _ => continue,
            }
        }
        Err(Error::ClaimContended)
    }

    /// The action as stored.
    pub async fn action(
        &mut self,
        tenant: &TenantId,
        key: &IdempotencyKey,
    ) -> Result<Action, Error> {
        let row = on!(self.select_action(tenant.as_str(), key.as_str()))?;
        row.ok_or(Error::NotFound)?.try_into()
    }

    /// Records success under the fencing token `token`. A stale token is
    /// refused with [`Error::Conflict`] and changes nothing.
    #[tracing::instrument(level = "debug", skip_all, fields(tenant = %tenant))]
    pub async fn complete(
        &mut self,
        tenant: &TenantId,
        key: &IdempotencyKey,
        token: i64,
        response: &str,
    ) -> Result<(), Error> {
        self.finish(
            tenant,
            key,
            token,
            &Outcome::Completed(response.to_owned()),
            false,
        )
        .await
    }

    /// Records a failure under the fencing token `token`. A retryable one
    /// lets the next `begin` claim again; a final one is answered forever.
    #[tracing::instrument(level = "debug", skip_all, fields(tenant = %tenant))]
    pub async fn fail(
        &mut self,
        tenant: &TenantId,
        key: &IdempotencyKey,
        token: i64,
        error: &str,
        retryable: bool,
    ) -> Result<(), Error> {
        let outcome = Outcome::Failed {
            error: error.to_owned(),
            retryable,
        };
        self.finish(tenant, key, token, &outcome, false).await
    }

    /// Records an outcome learned from the provider after an uncertain
    /// attempt (marked as reconciled), under the token the uncertain claim gave.
    #[tracing::instrument(level = "debug", skip_all, fields(tenant = %tenant))]
    pub async fn reconcile(
        &mut self,
        tenant: &TenantId,
        key: &IdempotencyKey,
        token: i64,
        outcome: &Outcome,
    ) -> Result<(), Error> {
        self.finish(tenant, key, token, outcome, true).await
    }

    async fn finish(
        &mut self,
        tenant: &TenantId,
        key: &IdempotencyKey,
        token: i64,
        outcome: &Outcome,
        reconciled: bool,
    ) -> Result<(), Error> {
        let now = self.now();
        let (t, k) = (tenant.as_str(), key.as_str());
        // The update returns the action type (for the statistics); the row is
        // read back only to explain a refusal.
        let updated = match outcome {
            Outcome::Completed(r) => on!(self.complete_action(t, k, token, r, now, reconciled))?,
            Outcome::Failed { error, retryable } => {
                on!(self.fail_action(t, k, token, error, *retryable, now, reconciled))?
            }
        };
        if let Some(action) = updated {
            self.note(tenant, &action, |c| match outcome {
                Outcome::Completed(_) => c.counts.actions_completed += 1,
                Outcome::Failed { .. } => c.counts.actions_failed += 1,
            });
            return Ok(());
        }
        let row = on!(self.select_action(t, k))?.ok_or(Error::NotFound)?;
        // Saying the same thing twice with the current token is not a
        // conflict (the holder retried its write to us).
        let same = row.fencing_token == token
            && match outcome {
                Outcome::Completed(r) => {
                    row.state == "completed" && row.response.as_deref() == Some(r)
                }
                Outcome::Failed { error, retryable } => {
                    row.state == "failed"
                        && row.error.as_deref() == Some(error)
                        && row.retryable == Some(*retryable)
                }
            };
        if same {
            return Ok(());
        }
        Err(Error::StaleToken {
            token,
            current: row.fencing_token,
            state: row.state,
        })
    }

    // ---- HTTP Idempotency-Key records ----------------------------------

    /// Starts a request under a client key. `lock` bounds how long a request
    /// that died mid-way keeps its key from a retry with the same request.
    #[tracing::instrument(level = "debug", skip_all, fields(tenant = %tenant))]
    pub async fn http_begin(
        &mut self,
        tenant: &TenantId,
        req: &HttpRequestKey<'_>,
        lock: Duration,
    ) -> Result<HttpBegin, Error> {
        let now = self.now();
        let locked_until = now.saturating_add(duration_ms(lock));
        let default_ttl = Retention::default().http_ms;
        let t = tenant.as_str();
        if on!(self.http_begin(t, req, locked_until, now, default_ttl))? {
            return Ok(HttpBegin::Proceed);
        }
        let row = on!(self.select_http_key(t, req.client_key))?.ok_or(Error::NotFound)?;
        let verdict = if row.fingerprint != req.fingerprint {
            HttpBegin::Mismatch
        } else if row.state == "completed" {
            HttpBegin::Replay(StoredResponse {
                status: row
                    .status
                    .and_then(|s| u16::try_from(s).ok())
                    .ok_or_else(|| Error::Corrupt("stored HTTP status".into()))?,
                headers: row.headers.unwrap_or_default(),
                body: row.body.unwrap_or_default(),
            })
        } else {
            HttpBegin::InProgress
        };
        self.note(tenant, "http", |c| match &verdict {
            HttpBegin::Replay(_) => c.counts.http_replays += 1,
            HttpBegin::InProgress => c.counts.http_409 += 1,
            HttpBegin::Mismatch => c.counts.http_422 += 1,
            HttpBegin::Proceed => {}
        });
        Ok(verdict)
    }

    /// Stores the response of a request started by [`http_begin`](Self::http_begin).
    pub async fn http_complete(
        &mut self,
        tenant: &TenantId,
        req: &HttpRequestKey<'_>,
        response: &StoredResponse,
    ) -> Result<(), Error> {
        let n =
            on!(self.http_complete(tenant.as_str(), req.client_key, req.fingerprint, response))?;
        if n == 0 {
            return Err(Error::HttpKeyNotHeld);
        }
        Ok(())
    }

    /// Frees the key of a request that failed in a way that must not be
    /// replayed (a 5xx), so the client's retry runs again.
    pub async fn http_release(
        &mut self,
        tenant: &TenantId,
        req: &HttpRequestKey<'_>,
    ) -> Result<(), Error> {
        on!(self.http_release(tenant.as_str(), req.client_key, req.fingerprint))?;
        Ok(())
    }

    // ---- dedup and outbox ----------------------------------------------

    /// Marks `(source, event_id)` consumed. Inside a transaction the mark
    /// commits or rolls back with the caller's own writes.
    #[tracing::instrument(level = "debug", skip_all, fields(tenant = %tenant, source))]
    pub async fn consume_once(
        &mut self,
        tenant: &TenantId,
        source: &str,
        event_id: &str,
    ) -> Result<Consumed, Error> {
        let now = self.now();
        let n = on!(self.consume_event(tenant.as_str(), source, event_id, now))?;
        Ok(if n == 1 {
            Consumed::First
        } else {
            Consumed::Duplicate
        })
    }

    /// Queues a message; returns its id. Call it in the transaction that
    /// records the action's claim or outcome.
    pub async fn outbox_enqueue(
        &mut self,
        tenant: &TenantId,
        topic: &str,
        payload: &str,
    ) -> Result<i64, Error> {
        let now = self.now();
        Ok(on!(self.outbox_insert(
            tenant.as_str(),
            topic,
            payload,
            now
        ))?)
    }

    /// Pending messages, oldest first. In a Postgres transaction the rows
    /// stay locked (others skip them) until commit.
    pub async fn outbox_fetch(
        &mut self,
        tenant: &TenantId,
        limit: u32,
    ) -> Result<Vec<OutboxMessage>, Error> {
        Ok(on!(self.outbox_fetch(tenant.as_str(), i64::from(limit)))?)
    }

    /// Marks messages sent; returns how many were still pending.
    pub async fn outbox_mark_sent(&mut self, tenant: &TenantId, ids: &[i64]) -> Result<u64, Error> {
        let now = self.now();
        let mut n = 0;
        for id in ids {
            n += on!(self.outbox_mark_sent(tenant.as_str(), *id, now))?;
        }
        Ok(n)
    }

    // ---- the demo payment provider ------------------------------------

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

    // ---- the live monitor --------------------------------------------------

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
        let (in_flight, expired, uncertain) = on!(self.live_action_counts(t, now))?;
        let limit = i64::from(limit);
        // The lists are read only when the counts say there is something
        // to list: most tenants have nothing uncertain, and the monitor
        // reads every tenant every half second.
        let mut rows: Vec<(bool, crate::backend::UncertainRow)> = Vec::new();
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
        Ok(LiveActions {
            in_flight,
            uncertain: expired + uncertain,
            uncertain_keys: rows
                .into_iter()
                .map(|(expired, r)| UncertainAction {
                    key: r.idem_key,
                    action: r.action,
                    started_ms: r.started_ms,
                    lease_until_ms: r.lease_until_ms,
                    attempts: r.attempts,
                    lease_expired_unswept: expired,
                })
                .collect(),
        })
    }

    // ---- saved dashboard scenarios --------------------------------------

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

    // ---- settings ------------------------------------------------------

    /// The tenant's retention (the defaults when never set).
    pub async fn retention(&mut self, tenant: &TenantId) -> Result<Retention, Error> {
        let row = on!(self.select_retention(tenant.as_str()))?;
        Ok(row.map_or_else(Retention::default, |r| Retention {
            intent_ms: r.intent_retention_ms,
            action_ms: r.action_retention_ms,
            http_ms: r.http_retention_ms,
        }))
    }

    /// Sets the tenant's retention. Every period must be positive.
    pub async fn set_retention(&mut self, tenant: &TenantId, r: &Retention) -> Result<(), Error> {
        if r.intent_ms <= 0 || r.action_ms <= 0 || r.http_ms <= 0 {
            return Err(Error::Invalid("retention periods must be positive".into()));
        }
        on!(self.upsert_retention(tenant.as_str(), r))?;
        Ok(())
    }
}

/// Statistics of one delivery.
pub(crate) fn count_delivery(c: &mut Cell, r: &RecordedIntent, now: Millis) {
    c.counts.deliveries += 1;
    if r.inserted {
        c.counts.intents += 1;
    } else {
        c.counts.redeliveries += 1;
        if r.deliveries == 2 {
            c.counts.redelivered_intents += 1;
        }
        c.delay(now - r.first_seen_ms);
    }
    if r.diverged {
        c.counts.divergences += 1;
    }
}

/// A candidate intent, normalized and keyed.
pub(crate) struct Candidate {
    pub reference: String,
    pub key: IdempotencyKey,
    pub rules_version: RulesVersion,
    pub payload: NormalizedPayload,
}

impl Candidate {
    pub(crate) fn write_parts<'a>(
        &'a self,
        tenant: &'a TenantId,
        action: &'a str,
        json: &'a str,
    ) -> IntentWrite<'a> {
        IntentWrite {
            tenant: tenant.as_str(),
            reference: &self.reference,
            action,
            rules_version: i32::try_from(self.rules_version.number()).unwrap_or(i32::MAX),
            key: self.key.as_str(),
            payload: json,
        }
    }

    /// What this delivery learned; `n` is how many identical deliveries the
    /// row write stood for and `nth` (0-based) which of them this one was.
    pub(crate) fn recorded_nth(
        &self,
        row: &IntentRow,
        json: &str,
        n: i64,
        nth: i64,
    ) -> Result<RecordedIntent, Error> {
        let inserted = row.deliveries == n && nth == 0;
        Ok(RecordedIntent {
            reference: self.reference.clone(),
            key: stored_key(&row.idem_key)?,
            rules_version: rules_version(row.rules_version)?,
            payload: if row.payload == json {
                self.payload.clone()
            } else {
                stored_payload(&row.payload)?
            },
            revision: row.revision,
            deliveries: row.deliveries - n + 1 + nth,
            divergences: row.divergences,
            first_seen_ms: row.first_seen_ms,
            last_seen_ms: row.last_seen_ms,
            inserted,
            diverged: row.payload != json,
            candidate_key: self.key.clone(),
        })
    }

    fn recorded(&self, row: IntentRow, json: &str, n: i64) -> Result<RecordedIntent, Error> {
        self.recorded_nth(&row, json, n, 0)
    }
}

fn stored_key(k: &str) -> Result<IdempotencyKey, Error> {
    IdempotencyKey::try_from(k).map_err(|_| Error::Corrupt("stored key".into()))
}

fn stored_payload(p: &str) -> Result<NormalizedPayload, Error> {
    NormalizedPayload::from_json(p).map_err(|_| Error::Corrupt("stored payload".into()))
}

fn rules_version(v: i32) -> Result<RulesVersion, Error> {
    u32::try_from(v)
        .ok()
        .and_then(|v| RulesVersion::try_from(v).ok())
        .ok_or_else(|| Error::Corrupt(format!("stored rules version {v}")))
}

impl TryFrom<IntentRow> for Intent {
    type Error = Error;
    fn try_from(row: IntentRow) -> Result<Self, Error> {
        Ok(Intent {
            key: stored_key(&row.idem_key)?,
            rules_version: rules_version(row.rules_version)?,
            payload: stored_payload(&row.payload)?,
            revision: row.revision,
            deliveries: row.deliveries,
            divergences: row.divergences,
            first_seen_ms: row.first_seen_ms,
            last_seen_ms: row.last_seen_ms,
        })
    }
}

impl TryFrom<HistoryRow> for IntentVersion {
    type Error = Error;
    fn try_from(row: HistoryRow) -> Result<Self, Error> {
        Ok(IntentVersion {
            revision: row.revision,
            rules_version: rules_version(row.rules_version)?,
            key: stored_key(&row.idem_key)?,
            payload: stored_payload(&row.payload)?,
            replaced_ms: row.replaced_ms,
            reason: row.reason,
        })
    }
}

impl TryFrom<ActionRow> for Action {
    type Error = Error;
    fn try_from(row: ActionRow) -> Result<Self, Error> {
        Ok(Action {
            state: ActionState::parse(&row.state)
                .ok_or_else(|| Error::Corrupt(format!("action state {:?}", row.state)))?,
            action: row.action,
            token: row.fencing_token,
            attempts: row.attempts,
            lease_until_ms: row.lease_until_ms,
            started_ms: row.started_ms,
            updated_ms: row.updated_ms,
            response: row.response,
            error: row.error,
            retryable: row.retryable,
            reconciled: row.reconciled,
        })
    }
}

/// Reads a successful claim.
fn claimed(row: BeginRow) -> Result<Begin, Error> {
    let lease_until_ms = row
        .lease_until_ms
        .ok_or_else(|| Error::Corrupt("a claim without a lease".into()))?;
    Ok(match (row.state.as_str(), row.prev_token) {
        ("uncertain", Some(prev)) => Begin::Uncertain {
            token: row.fencing_token,
            attempt: row.attempts,
            lease_until_ms,
            previous: PreviousAttempt {
                token: prev,
                started_ms: row.prev_started_ms.unwrap_or_default(),
                lease_until_ms: row.prev_lease_until_ms,
            },
        },
        ("started", _) => Begin::Claimed {
            token: row.fencing_token,
            attempt: row.attempts,
            lease_until_ms,
            // Only a retry after a retryable failure carries one.
            previous_error: if row.prev_state.as_deref() == Some("failed") {
                row.error
            } else {
                None
            },
        },
        (state, _) => return Err(Error::Corrupt(format!("claim returned state {state:?}"))),
    })
}

/// A unique violation inside a correction means another correction of the
/// same revision won.
fn conflict_on_unique(e: sqlx::Error) -> Error {
    match &e {
        sqlx::Error::Database(d) if d.is_unique_violation() => Error::ConcurrentCorrection,
        _ => Error::Database(e),
    }
}
