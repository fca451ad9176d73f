//! Intents: record a delivery (first write wins), read, correct, history.

use super::*;

impl Session {
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
        if self.store.backend() == crate::Backend::Sqlite {
            // The intents table's triggers journal the counts inside the
            // upsert itself (migration 0010).
            return self.record_intent_counted(tenant, action, payload).await;
        }
        self.enter().await?;
        let result = self.record_intent_counted(tenant, action, payload).await;
        self.leave(result).await
    }

    async fn record_intent_counted(
        &mut self,
        tenant: &TenantId,
        action: &str,
        payload: &Payload<'_>,
    ) -> Result<RecordedIntent, Error> {
        let candidate = self.store.derive(tenant, action, payload)?;
        self.record_candidate(tenant, action, candidate).await
    }

    /// Records a delivery of an intent and claims the frozen intent's
    /// action in one transaction: the worker's first call, one commit where
    /// [`record_intent`](Self::record_intent) then
    /// [`begin_attempt`](Self::begin_attempt) are two. Nothing is kept when
    /// either fails. The key is derived before the transaction opens, so
    /// SQLite's write lock is never held for the HMAC.
    #[tracing::instrument(level = "debug", skip_all, fields(tenant = %tenant, action = %action))]
    pub async fn record_and_claim(
        &mut self,
        tenant: &TenantId,
        action: &ActionType,
        payload: &Payload<'_>,
        lease: Duration,
        attempt_id: Option<&str>,
    ) -> Result<(RecordedIntent, Begin), Error> {
        let candidate = self.store.derive(tenant, action.as_str(), payload)?;
        self.enter_always().await?;
        let result = async {
            let recorded = self
                .record_candidate(tenant, action.as_str(), candidate)
                .await?;
            let begin = self
                .claim(tenant, action, &recorded.key, lease, attempt_id)
                .await?;
            Ok((recorded, begin))
        }
        .await;
        self.leave(result).await
    }

    async fn record_candidate(
        &mut self,
        tenant: &TenantId,
        action: &str,
        candidate: Candidate,
    ) -> Result<RecordedIntent, Error> {
        let json = candidate.payload.to_json();
        let write = candidate.write_parts(tenant, action, &json);
        let now = self.now();
        let row = on!(self.record_intent(&write, 1, now))?;
        let recorded = candidate.recorded(row, &json, 1)?;
        if self.store.backend() != crate::Backend::Sqlite {
            self.note(tenant, action, |c| count_delivery(c, &recorded, now));
        }
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
        self.enter().await?;
        let result = self
            .correct_intent_counted(tenant, action, payload, reason)
            .await;
        self.leave(result).await
    }

    async fn correct_intent_counted(
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

    /// See [`Store::supersede_intent`](crate::Store::supersede_intent): the
    /// statements, inside its transaction.
    pub(crate) async fn supersede_in(
        &mut self,
        tenant: &TenantId,
        action: &str,
        reference: &str,
        candidate: Option<&Payload<'_>>,
        actor: &str,
        reason: &str,
    ) -> Result<Superseded, Error> {
        let current = self.intent(tenant, action, reference).await?;
        let now = self.now();
        let sealed = on!(self.seal_failed_action(tenant.as_str(), current.key.as_str(), now))?;
        if sealed.is_none() {
            let state = match self.action(tenant, &current.key).await {
                Ok(a) => a.state.as_str().to_owned(),
                Err(Error::NotFound) => "not started".to_owned(),
                Err(e) => return Err(e),
            };
            return Err(Error::NotSupersedable(state));
        }
        let generation = idem_core::Generation::try_from(i64::from(current.revision) + 1)
            .map_err(|e| Error::Corrupt(e.to_string()))?;
        let (rules_version, payload, source) = match candidate {
            Some(p) => {
                let c = self.store.derive(tenant, action, p)?;
                if c.reference != reference {
                    return Err(Error::Invalid(format!(
                        "the candidate's reference is {:?}; a supersession keeps the intent's own, {reference:?}",
                        c.reference
                    )));
                }
                (c.rules_version, c.payload, c.source)
            }
            None => (current.rules_version, current.payload.clone(), None),
        };
        let key = self.store.deriver()?.key_superseding(
            tenant,
            action,
            rules_version,
            &payload,
            generation,
        );
        let json = payload.to_json();
        let write = IntentWrite {
            tenant: tenant.as_str(),
            reference,
            action,
            rules_version: i32::try_from(rules_version.number()).unwrap_or(i32::MAX),
            key: key.as_str(),
            payload: &json,
            candidate: source.as_deref(),
        };
        let filed = format!("superseded by {}: {}", actor.trim(), reason.trim());
        on!(self.archive_superseded(tenant.as_str(), reference, action, now, &filed))
            .map_err(conflict_on_unique)?;
        let row = on!(self.replace_intent(&write, now))?.ok_or(Error::NotFound)?;
        self.note(tenant, action, |c| c.counts.corrections += 1);
        Ok(Superseded {
            intent: row.try_into()?,
            previous_key: current.key,
            released: source.is_none(),
        })
    }

    /// Where the intent that had `key` went: the versions filed with that
    /// key (a superseded or corrected intent's), newest first.
    pub async fn filed_by_key(
        &mut self,
        tenant: &TenantId,
        key: &IdempotencyKey,
    ) -> Result<Vec<Filed>, Error> {
        let rows = on!(self.history_by_key(tenant.as_str(), key.as_str()))?;
        Ok(rows
            .into_iter()
            .map(|r| Filed {
                reference: r.reference,
                action: r.action,
                revision: r.revision,
                replaced_ms: r.replaced_ms,
                reason: r.reason,
            })
            .collect())
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
}
