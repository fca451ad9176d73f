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
