//! Actions: claim under a lease and a fencing token, settle, read.

use super::*;

impl Session {
    /// Claims the action `key` for `lease`, or says why not (see [`Begin`]).
    #[tracing::instrument(level = "debug", skip_all, fields(tenant = %tenant, action = %action))]
    pub async fn begin_action(
        &mut self,
        tenant: &TenantId,
        action: &ActionType,
        key: &IdempotencyKey,
        lease: Duration,
    ) -> Result<Begin, Error> {
        self.begin_attempt(tenant, action, key, lease, None).await
    }

    /// [`begin_action`](Self::begin_action) for an attempt the caller named:
    /// when that attempt already holds the claim (its first answer was
    /// lost), the same claim comes back, token and all, instead of
    /// [`Begin::InFlight`].
    #[tracing::instrument(level = "debug", skip_all, fields(tenant = %tenant, action = %action))]
    pub async fn begin_attempt(
        &mut self,
        tenant: &TenantId,
        action: &ActionType,
        key: &IdempotencyKey,
        lease: Duration,
        attempt_id: Option<&str>,
    ) -> Result<Begin, Error> {
        self.enter().await?;
        let result = self.claim(tenant, action, key, lease, attempt_id).await;
        self.leave(result).await
    }

    /// Extends the lease of the claim `token` holds to `lease` from now, and
    /// returns its new end. A token that no longer holds the claim (a newer
    /// claim took it, it was settled, or its lease ran out) is refused with
    /// [`Error::StaleToken`] and changes nothing.
    #[tracing::instrument(level = "debug", skip_all, fields(tenant = %tenant))]
    pub async fn renew(
        &mut self,
        tenant: &TenantId,
        key: &IdempotencyKey,
        token: i64,
        lease: Duration,
    ) -> Result<Millis, Error> {
        let now = self.now();
        let until = now.saturating_add(duration_ms(lease));
        let (t, k) = (tenant.as_str(), key.as_str());
        if let Some(until) = on!(self.renew_action(t, k, token, until, now))? {
            return Ok(until);
        }
        let row = on!(self.select_action(t, k))?.ok_or(Error::NotFound)?;
        if row.fencing_token == token
            && matches!(row.state, ActionState::Started | ActionState::Uncertain)
        {
            return Err(Error::LeaseLost { token });
        }
        Err(Error::StaleToken {
            token,
            current: row.fencing_token,
            state: row.state.as_str().to_owned(),
        })
    }

    /// Marks the claim `token` holds uncertain at once: its effect raised,
    /// so whether the provider acted is unknown. The next claim is granted
    /// as [`Begin::Uncertain`] without waiting for the lease, and the
    /// monitor's work queue lists it. Saying it twice is not a conflict.
    #[tracing::instrument(level = "debug", skip_all, fields(tenant = %tenant))]
    pub async fn mark_uncertain(
        &mut self,
        tenant: &TenantId,
        key: &IdempotencyKey,
        token: i64,
        error: &str,
    ) -> Result<(), Error> {
        self.enter().await?;
        let result = self.mark_uncertain_counted(tenant, key, token, error).await;
        self.leave(result).await
    }

    async fn mark_uncertain_counted(
        &mut self,
        tenant: &TenantId,
        key: &IdempotencyKey,
        token: i64,
        error: &str,
    ) -> Result<(), Error> {
        let now = self.now();
        let (t, k) = (tenant.as_str(), key.as_str());
        if let Some(action) = on!(self.mark_uncertain(t, k, token, error, now))? {
            self.note(tenant, &action, |c| c.counts.actions_uncertain += 1);
            return Ok(());
        }
        let row = on!(self.select_action(t, k))?.ok_or(Error::NotFound)?;
        if row.fencing_token == token && row.state == ActionState::Uncertain {
            return Ok(());
        }
        Err(Error::StaleToken {
            token,
            current: row.fencing_token,
            state: row.state.as_str().to_owned(),
        })
    }

    pub(super) async fn claim(
        &mut self,
        tenant: &TenantId,
        action: &ActionType,
        key: &IdempotencyKey,
        lease: Duration,
        attempt_id: Option<&str>,
    ) -> Result<Begin, Error> {
        // A claim can race with a lease running out between the upsert and
        // the read that explains a refusal; a second round settles it.
        for _ in 0..3 {
            let now = self.now();
            let until = now.saturating_add(duration_ms(lease));
            let t = tenant.as_str();
            let k = key.as_str();
            if let Some(row) =
                on!(self.begin_action(t, k, action.as_str(), now, until, attempt_id))?
            {
                // Swept attempts were counted when swept (and rows swept
                // before the sweep kept the lease have none).
                let swept = row.prev_state.as_deref() == Some("swept");
                self.keep_replaced(t, k, &row, now).await?;
                let begin = claimed(row)?;
                // SQLite's claim journals itself (its triggers, migration 0022).
                if self.store.backend() == crate::Backend::Sqlite {
                    return Ok(begin);
                }
                self.note(tenant, action.as_str(), |c| {
                    c.counts.actions_started += 1;
                    if let Begin::Uncertain { previous, .. } = &begin {
                        if !swept && previous.lease_until_ms.is_some() {
                            c.counts.actions_uncertain += 1;
                        }
                    }
                });
                return Ok(begin);
            }
            let row = on!(self.select_action(t, k))?.ok_or(Error::NotFound)?;
            if row.action != action.as_str() {
                return Err(Error::Invalid(format!(
                    "field `action`: the key {k} belongs to action `{}`, not `{}`",
                    row.action,
                    action.as_str()
                )));
            }
            match (row.state, row.lease_until_ms) {
                (ActionState::Completed, _) => {
                    return Ok(Begin::Completed {
                        response: row.response.unwrap_or_default(),
                        attempts: row.attempts,
                        reconciled: row.reconciled,
                    })
                }
                (ActionState::Failed, _) if row.retryable != Some(true) => {
                    return Ok(Begin::Failed {
                        error: row.error.unwrap_or_default(),
                    })
                }
                (ActionState::Started | ActionState::Uncertain, Some(until)) if until > now => {
                    if let Some(id) = attempt_id {
                        if let Some(held) = on!(self.select_held_claim(t, k, id, now))? {
                            return claimed(held);
                        }
                    }
                    return Ok(Begin::InFlight {
                        lease_until_ms: until,
                    });
                }
                _ => continue,
            }
        }
        Err(Error::ClaimContended)
    }

    /// Keeps the attempt a claim just replaced, in the claim's transaction,
    /// so the action's history has every attempt. A first claim replaced
    /// nothing and writes nothing.
    async fn keep_replaced(
        &mut self,
        tenant: &str,
        key: &str,
        row: &crate::backend::BeginRow,
        now: Millis,
    ) -> Result<(), Error> {
        let (Some(token), Some(ended)) = (row.prev_token, row.prev_state.as_deref()) else {
            return Ok(());
        };
        // A replaced claim still `started` ran out of lease: expired.
        let ended = match ended {
            "started" => AttemptEnd::Expired,
            other => AttemptEnd::parse(other)
                .ok_or_else(|| Error::Corrupt(format!("a replaced attempt's state {other:?}")))?,
        };
        let w = crate::backend::AttemptWrite {
            tenant,
            key,
            attempt: row.attempts - 1,
            token,
            started_ms: row.prev_started_ms.unwrap_or_default(),
            lease_until_ms: row.prev_lease_until_ms,
            ended,
            // What the attempt ended with, whatever the state: a failure's
            // text, or the reason it was marked uncertain (the first
            // evidence, kept beside later attempts' reasons).
            error: row.prev_error.as_deref(),
            now,
        };
        on!(self.insert_action_attempt(&w))?;
        Ok(())
    }

    /// The attempts later claims replaced, oldest first (the current one is
    /// the action itself). Attempts replaced before this history was kept
    /// are not there: compare their number with the action's `attempts`.
    pub async fn replaced_attempts(
        &mut self,
        tenant: &TenantId,
        key: &IdempotencyKey,
    ) -> Result<Vec<ReplacedAttempt>, Error> {
        let rows = on!(self.action_attempts(tenant.as_str(), key.as_str()))?;
        Ok(rows
            .into_iter()
            .map(|r| ReplacedAttempt {
                attempt: r.attempt,
                token: r.fencing_token,
                started_ms: r.started_ms,
                lease_until_ms: r.lease_until_ms,
                ended: r.ended,
                error: r.error,
                replaced_ms: r.replaced_ms,
            })
            .collect())
    }

    /// The intent an action key was derived from, with its reference and
    /// action type; `None` when no kept intent has this key (retention
    /// removed it, or the key was derived by a caller that never recorded
    /// an intent).
    pub async fn intent_by_key(
        &mut self,
        tenant: &TenantId,
        key: &IdempotencyKey,
    ) -> Result<Option<(String, String, Intent)>, Error> {
        let row = on!(self.intent_by_key(tenant.as_str(), key.as_str()))?;
        row.map(|r| Ok((r.reference, r.action, r.intent.try_into()?)))
            .transpose()
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
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # use idem_core::{Catalog, KeyDeriver, Secret};
    /// # use idem_store::{Options, Store};
    /// # use std::sync::Arc;
    /// # let dir = tempfile::tempdir()?;
    /// # let url = format!("sqlite://{}", dir.path().join("idem.db").display());
    /// # let deriver = Arc::new(KeyDeriver::new(&Secret::new(b"the shared secret".to_vec())?));
    /// # let store = Store::connect(&url, Options::new(Arc::new(Catalog::builtin()), deriver)).await?;
    /// # store.migrate().await?;
    /// use idem_core::{ActionType, IdempotencyKey, TenantId};
    /// use idem_store::Begin;
    /// use std::time::Duration;
    ///
    /// let (tenant, action) = (TenantId::try_from("acme")?, ActionType::try_from("pix.cobranca")?);
    /// let key = IdempotencyKey::try_from("7".repeat(64))?;
    /// let Begin::Claimed { token, .. } = store.begin_action(&tenant, &action, &key, Duration::from_secs(30)).await? else {
    ///     panic!("the first claim is granted");
    /// };
    /// let mut session = store.session().await?;
    /// session.complete(&tenant, &key, token, r#"{"charge_id": "ch_1"}"#).await?;
    /// // A token from an older claim records nothing.
    /// assert!(session.complete(&tenant, &key, token - 1, "{}").await.is_err());
    /// assert_eq!(session.action(&tenant, &key).await?.response.as_deref(), Some(r#"{"charge_id": "ch_1"}"#));
    /// # Ok(())
    /// # }
    /// ```
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
    ///
    /// An attempt whose lease ran out without an outcome is uncertain, never
    /// completed: the next claim says so, and whoever asked the provider
    /// records its answer here.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # use idem_core::{Catalog, KeyDeriver, Secret};
    /// # use idem_store::{Options, Store};
    /// # use std::sync::Arc;
    /// # let dir = tempfile::tempdir()?;
    /// # let url = format!("sqlite://{}", dir.path().join("idem.db").display());
    /// # let deriver = Arc::new(KeyDeriver::new(&Secret::new(b"the shared secret".to_vec())?));
    /// use idem_core::{ActionType, IdempotencyKey, TenantId};
    /// use idem_store::{Begin, ManualClock, Outcome};
    /// use std::time::Duration;
    ///
    /// let clock = ManualClock::new(1_700_000_000_000);
    /// let options = Options { clock: Arc::new(clock.clone()), ..Options::new(Arc::new(Catalog::builtin()), deriver) };
    /// let store = Store::connect(&url, options).await?;
    /// store.migrate().await?;
    /// let (tenant, action) = (TenantId::try_from("acme")?, ActionType::try_from("pix.cobranca")?);
    /// let key = IdempotencyKey::try_from("7".repeat(64))?;
    /// let lease = Duration::from_secs(30);
    ///
    /// // A worker claims the charge, calls the provider, and dies.
    /// store.begin_action(&tenant, &action, &key, lease).await?;
    /// clock.advance(Duration::from_secs(31));
    ///
    /// // The next claim learns the outcome is unknown, and holds the action.
    /// let Begin::Uncertain { token, .. } = store.begin_action(&tenant, &action, &key, lease).await? else {
    ///     panic!("a lease that ran out is uncertain");
    /// };
    /// // The provider says the charge went through: record it.
    /// let receipt = Outcome::Completed(r#"{"charge_id": "ch_1"}"#.to_owned());
    /// store.session().await?.reconcile(&tenant, &key, token, &receipt).await?;
    /// assert!(matches!(
    ///     store.begin_action(&tenant, &action, &key, lease).await?,
    ///     Begin::Completed { .. }
    /// ));
    /// # Ok(())
    /// # }
    /// ```
    #[tracing::instrument(level = "debug", skip_all, fields(tenant = %tenant))]
    pub async fn reconcile(
        &mut self,
        tenant: &TenantId,
        key: &IdempotencyKey,
        token: i64,
        outcome: &Outcome,
    ) -> Result<(), Error> {
        self.check_reconcilable(tenant, key, token).await?;
        self.finish(tenant, key, token, outcome, true).await
    }

    /// A reconciliation records what the provider says about an attempt
    /// whose outcome is unknown: only an uncertain action has one. A claim
    /// that started fresh knows its own outcome; it completes or fails it.
    async fn check_reconcilable(
        &mut self,
        tenant: &TenantId,
        key: &IdempotencyKey,
        token: i64,
    ) -> Result<(), Error> {
        if let Some(row) = on!(self.select_action(tenant.as_str(), key.as_str()))? {
            // A started claim whose lease ran out is uncertain, swept or not.
            let running = row.lease_until_ms.is_some_and(|until| until > self.now());
            if row.fencing_token == token && row.state == ActionState::Started && running {
                return Err(Error::Invalid(
                    "field `token`: this claim is not uncertain (it started fresh, so its holder knows the outcome): complete or fail it; reconcile is for an action whose outcome is unknown".into(),
                ));
            }
        }
        Ok(())
    }

    async fn finish(
        &mut self,
        tenant: &TenantId,
        key: &IdempotencyKey,
        token: i64,
        outcome: &Outcome,
        reconciled: bool,
    ) -> Result<(), Error> {
        self.finish_returning(tenant, key, token, outcome, reconciled)
            .await
            .map(drop)
    }

    /// Records `outcome` under the fencing token `token` as
    /// [`complete`](Self::complete), [`fail`](Self::fail) or (with
    /// `reconciled`) [`reconcile`](Self::reconcile) do, and returns the
    /// action as it now stands: the answer a caller shows, without reading
    /// the row again.
    #[tracing::instrument(level = "debug", skip_all, fields(tenant = %tenant))]
    pub async fn settle_action(
        &mut self,
        tenant: &TenantId,
        key: &IdempotencyKey,
        token: i64,
        outcome: &Outcome,
        reconciled: bool,
    ) -> Result<Action, Error> {
        if reconciled {
            self.check_reconcilable(tenant, key, token).await?;
        }
        self.finish_returning(tenant, key, token, outcome, reconciled)
            .await
    }

    async fn finish_returning(
        &mut self,
        tenant: &TenantId,
        key: &IdempotencyKey,
        token: i64,
        outcome: &Outcome,
        reconciled: bool,
    ) -> Result<Action, Error> {
        // One statement that journals its own count (SQLite: the actions
        // table's trigger, migration 0022; PostgreSQL: a CTE), so outside
        // the caller's transaction there is none to open: one round trip
        // and one commit, where a transaction took four round trips.
        // On SQLite it still takes its write turn (a caller's transaction
        // holds one already): see `crate::write_queue`.
        if self.explicit || self.store.backend() != crate::Backend::Sqlite {
            return self.settle(tenant, key, token, outcome, reconciled).await;
        }
        self.take_writer().await?;
        let turn = self.store.inner.writers.turn().await;
        let settled = match turn {
            Ok(_turn) => self.settle(tenant, key, token, outcome, reconciled).await,
            Err(e) => Err(e),
        };
        // The writers' connection goes back at once: this session may go on
        // reading, and the next writer is waiting for it.
        self.inner = Inner::Idle;
        settled
    }

    async fn settle(
        &mut self,
        tenant: &TenantId,
        key: &IdempotencyKey,
        token: i64,
        outcome: &Outcome,
        reconciled: bool,
    ) -> Result<Action, Error> {
        let now = self.now();
        let (t, k) = (tenant.as_str(), key.as_str());
        // The update returns the row (the caller's answer, and its action
        // type for the statistics); it is read again only after a refusal.
        // Counted by the statement itself, unless statistics are off or the
        // caller's transaction journals them at its commit (PostgreSQL;
        // SQLite's trigger counts whatever this says).
        let counted = self.store.inner.stats && !self.explicit;
        let updated = match outcome {
            Outcome::Completed(r) => {
                on!(self.complete_action(t, k, token, r, now, reconciled, counted))?
            }
            Outcome::Failed { error, retryable } => {
                on!(self.fail_action(t, k, token, error, *retryable, now, reconciled, counted))?
            }
        };
        if let Some(row) = updated {
            if !counted && self.store.backend() != crate::Backend::Sqlite {
                let action = row.action.clone();
                self.note(tenant, &action, |c| match outcome {
                    Outcome::Completed(_) => c.counts.actions_completed += 1,
                    Outcome::Failed { .. } => c.counts.actions_failed += 1,
                });
            }
            return row.try_into();
        }
        let row = on!(self.select_action(t, k))?.ok_or(Error::NotFound)?;
        // Saying the same thing twice with the current token is not a
        // conflict (the holder retried its write to us).
        let same = row.fencing_token == token
            && match outcome {
                Outcome::Completed(r) => {
                    row.state == ActionState::Completed && row.response.as_deref() == Some(r)
                }
                Outcome::Failed { error, retryable } => {
                    row.state == ActionState::Failed
                        && row.error.as_deref() == Some(error)
                        && row.retryable == Some(*retryable)
                }
            };
        if same {
            return row.try_into();
        }
        Err(Error::StaleToken {
            token,
            current: row.fencing_token,
            state: row.state.as_str().to_owned(),
        })
    }
}
