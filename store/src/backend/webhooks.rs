//! The outbox and the webhook relay: messages queued with the action,
//! endpoints, deliveries fanned out, claimed and settled.

use super::common::{first, queries, R};
use crate::model::{
    DeliveryOutcome, Millis, OutboxMessage, WebhookCounts, WebhookDelivery, WebhookEndpoint,
};

queries! {
    statements in webhooks;
    /// The outbox and webhook queries, one per statement, each with its signature;
    /// [`queries!`] implements them for both backends' connections.
    pub(crate) trait WebhookQueries {
        fn outbox_insert(c, tenant: &str, topic: &str, payload: &str, now: Millis) -> R<i64> {
            sqlx::query::<Db>(q::OUTBOX_INSERT)
                .bind(tenant)
                .bind(topic)
                .bind(payload)
                .bind(now)
                .fetch_all(&mut *c)
                .await
                .and_then(first)?
                .try_get::<i64, _>("id")
        }

        fn outbox_fetch(c, tenant: &str, limit: i64) -> R<Vec<OutboxMessage>> {
            let rows = sqlx::query::<Db>(q::OUTBOX_FETCH)
                .bind(tenant)
                .bind(limit)
                .fetch_all(&mut *c)
                .await?;
            rows.iter()
                .map(|r| {
                    Ok(OutboxMessage {
                        id: r.try_get("id")?,
                        topic: r.try_get("topic")?,
                        payload: r.try_get("payload")?,
                        created_ms: r.try_get("created_ms")?,
                    })
                })
                .collect()
        }

        fn outbox_mark_sent(c, tenant: &str, id: i64, now: Millis) -> R<u64> {
            sqlx::query::<Db>(q::OUTBOX_MARK_SENT)
                .bind(tenant)
                .bind(id)
                .bind(now)
                .execute(&mut *c)
                .await
                .map(|r| r.rows_affected())
        }

        fn insert_webhook_endpoint(c, tenant: &str, e: &WebhookEndpoint) -> R<()> {
            sqlx::query::<Db>(q::INSERT_WEBHOOK_ENDPOINT)
                .bind(tenant)
                .bind(&e.endpoint_id)
                .bind(&e.url)
                .bind(&e.events)
                .bind(&e.secret)
                .bind(e.created_ms)
                .execute(&mut *c)
                .await
                .map(|_| ())
        }

        fn list_webhook_endpoints(c, tenant: &str) -> R<Vec<WebhookEndpoint>> {
            sqlx::query_as::<Db, WebhookEndpoint>(q::LIST_WEBHOOK_ENDPOINTS)
                .bind(tenant)
                .fetch_all(&mut *c)
                .await
        }

        fn delete_webhook_endpoint(c, tenant: &str, endpoint_id: &str) -> R<bool> {
            sqlx::query::<Db>(q::DELETE_ENDPOINT_PENDING)
                .bind(tenant)
                .bind(endpoint_id)
                .execute(&mut *c)
                .await?;
            let n = sqlx::query::<Db>(q::DELETE_WEBHOOK_ENDPOINT)
                .bind(tenant)
                .bind(endpoint_id)
                .execute(&mut *c)
                .await?
                .rows_affected();
            Ok(n > 0)
        }

        fn insert_webhook_delivery(c, tenant: &str, m: &OutboxMessage, endpoint_id: &str, now: Millis) -> R<u64> {
            sqlx::query::<Db>(q::INSERT_WEBHOOK_DELIVERY)
                .bind(tenant)
                .bind(m.id)
                .bind(endpoint_id)
                .bind(&m.topic)
                .bind(&m.payload)
                .bind(m.created_ms)
                .bind(now)
                .execute(&mut *c)
                .await
                .map(|r| r.rows_affected())
        }

        /// `pairs`: a JSON array of `{"o": outbox id, "e": endpoint id}`.
        fn webhook_fan_out(c, tenant: &str, pairs: &str, now: Millis) -> R<u64> {
            sqlx::query::<Db>(q::WEBHOOK_FAN_OUT)
                .bind(tenant)
                .bind(pairs)
                .bind(now)
                .execute(&mut *c)
                .await
                .map(|r| r.rows_affected())
        }

        /// `ids`: a JSON array of outbox ids.
        fn outbox_mark_sent_many(c, tenant: &str, ids: &str, now: Millis) -> R<u64> {
            sqlx::query::<Db>(q::OUTBOX_MARK_SENT_MANY)
                .bind(tenant)
                .bind(ids)
                .bind(now)
                .execute(&mut *c)
                .await
                .map(|r| r.rows_affected())
        }

        /// `claims`: a JSON array of `{"o", "e", "a"}` (outbox id, endpoint
        /// id, attempt), all answered `status`.
        fn webhook_delivered_many(c, tenant: &str, claims: &str, status: u16, now: Millis) -> R<u64> {
            sqlx::query::<Db>(q::WEBHOOK_DELIVERED_MANY)
                .bind(tenant)
                .bind(claims)
                .bind(i32::from(status))
                .bind(now)
                .execute(&mut *c)
                .await
                .map(|r| r.rows_affected())
        }

        fn webhook_claim(c, tenant: &str, endpoint_id: &str, now: Millis, lease_until: Millis, limit: i64) -> R<Vec<WebhookDelivery>> {
            sqlx::query_as::<Db, WebhookDelivery>(q::WEBHOOK_CLAIM)
                .bind(tenant)
                .bind(endpoint_id)
                .bind(now)
                .bind(lease_until)
                .bind(limit)
                .fetch_all(&mut *c)
                .await
        }

        #[allow(clippy::too_many_arguments)] // one per column written
        fn webhook_settle(c, tenant: &str, outbox_id: i64, endpoint_id: &str, attempt: i32, outcome: &DeliveryOutcome, now: Millis) -> R<u64> {
            let q = match outcome {
                DeliveryOutcome::Delivered(status) => sqlx::query::<Db>(q::WEBHOOK_DELIVERED)
                    .bind(tenant)
                    .bind(outbox_id)
                    .bind(endpoint_id)
                    .bind(attempt)
                    .bind(i32::from(*status))
                    .bind(now),
                DeliveryOutcome::Failed {
                    status,
                    error,
                    retry_at_ms,
                } => sqlx::query::<Db>(q::WEBHOOK_FAILED)
                    .bind(tenant)
                    .bind(outbox_id)
                    .bind(endpoint_id)
                    .bind(attempt)
                    .bind(retry_at_ms.unwrap_or(now))
                    .bind(status.map(i32::from))
                    .bind(error.as_str())
                    .bind(if retry_at_ms.is_some() {
                        "pending"
                    } else {
                        "dead"
                    })
                    .bind(now),
            };
            q.execute(&mut *c).await.map(|r| r.rows_affected())
        }

        /// Deliveries by state: of one tenant, or of all with `admin`.
        fn webhook_counts(c, tenant: Option<&str>) -> R<WebhookCounts> {
            let rows = match tenant {
                Some(t) => {
                    sqlx::query::<Db>(q::LIVE_WEBHOOKS)
                        .bind(t)
                        .fetch_all(&mut *c)
                        .await?
                }
                None => {
                    sqlx::query::<Db>(crate::sql::webhooks::ADMIN_WEBHOOKS)
                        .fetch_all(&mut *c)
                        .await?
                }
            };
            let mut out = WebhookCounts::default();
            for r in rows {
                out.add(
                    r.try_get("state")?,
                    r.try_get("failed_before")?,
                    r.try_get("n")?,
                    r.try_get("oldest_ms")?,
                );
            }
            Ok(out)
        }
    }
}
