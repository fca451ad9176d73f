//! The outbox relay: delivers outbox messages to the webhook endpoints
//! tenants registered (`idem webhook add`), following the Standard Webhooks
//! specification (<https://www.standardwebhooks.com>).
//!
//! Each round, per tenant with endpoints:
//! 1. **Fan-out.** Pending outbox messages become one delivery per matching
//!    endpoint, and are marked sent, in one transaction (on PostgreSQL the
//!    messages are locked `for update skip locked`, so two relays never fan
//!    one out twice; the deliveries' primary key would refuse it anyway).
//! 2. **Claim.** Per endpoint, due deliveries are claimed with a lease; the
//!    attempt number is the fencing token of the outcome. A relay killed
//!    mid-delivery leaves its leases to run out; the next relay claims the
//!    deliveries again (at least once: the receiver dedupes on
//!    `webhook-id`, which is the same on every attempt).
//! 3. **Deliver.** Each claimed delivery is POSTed in a task of its own,
//!    at most [`RelayConfig::concurrency`] at a time and
//!    [`RelayConfig::per_endpoint`] per endpoint, each bounded by
//!    [`RelayConfig::timeout`]: a slow or dead receiver holds a few slots
//!    of its own, never the API or the other endpoints.
//! 4. **Settle.** A 2xx marks it delivered; anything else schedules the
//!    next attempt with exponential backoff and jitter, until the message
//!    is older than [`RelayConfig::give_up`] (24 h by default), when it is
//!    dead-lettered.

use base64::Engine as _;
use hmac::{Hmac, Mac};
use idem_core::TenantId;
use idem_store::{DeliveryOutcome, Millis, Store, WebhookDelivery, WebhookEndpoint};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::Semaphore;

pub use crate::config::RelayConfig;

/// The longest delay between two attempts.
const MAX_DELAY: Duration = Duration::from_secs(6 * 3600);
/// Outbox messages fanned out per transaction: small enough that SQLite's
/// write lock is not held long against the API's writes.
const FAN_OUT_BATCH: u32 = 100;

/// A running relay's shared parts.
#[derive(Clone)]
pub struct Relay {
    store: Store,
    http: reqwest::Client,
    cfg: Arc<RelayConfig>,
    slots: Arc<Semaphore>,
    /// Deliveries in flight per (tenant, endpoint).
    in_flight: Arc<Mutex<HashMap<(String, String), u32>>>,
    /// Rung when a delivery finishes: its slot may take the next one now.
    freed: Arc<tokio::sync::Notify>,
    /// Outcomes waiting to be written, and the lock of whoever writes them.
    settles: Arc<Mutex<Vec<Settle>>>,
    settle_writer: Arc<tokio::sync::Mutex<()>>,
}

/// One attempt's outcome, to be written under the attempt that claimed it.
struct Settle {
    tenant: TenantId,
    endpoint_id: String,
    delivery: WebhookDelivery,
    outcome: DeliveryOutcome,
}

impl std::fmt::Debug for Relay {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Relay")
            .field("cfg", &self.cfg)
            .finish_non_exhaustive()
    }
}

/// The relay's own store on `url`: a small pool, no statistics, and on
/// PostgreSQL commits that do not wait for the WAL flush. Each delivery's
/// outcome is its own commit, and waiting for a disk flush per outcome capped
/// the relay at a few hundred deliveries a second here; a commit lost in a
/// database crash can only make the relay send a message again, which
/// receivers dedupe by `webhook-id`.
pub async fn store(
    url: &str,
    clock: Arc<dyn idem_store::Clock>,
    cfg: &RelayConfig,
    timeouts: crate::config::DbTimeouts,
) -> Result<Store, idem_store::Error> {
    Store::connect(
        url,
        timeouts.apply(idem_store::Options {
            clock,
            async_commit: true,
            stats: false,
            flush_every: None,
            coalesce: false,
            max_connections: u32::try_from(cfg.concurrency / 2 + 2).unwrap_or(16),
            ..idem_store::Options::admin()
        }),
    )
    .await
}

impl Relay {
    /// The store it works on.
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// A relay over `store`. Fails when the lease does not exceed the
    /// timeout (a delivery still running could be claimed twice).
    pub fn new(store: Store, cfg: RelayConfig) -> anyhow::Result<Self> {
        anyhow::ensure!(
            cfg.lease > cfg.timeout,
            "the relay's lease ({:?}) must exceed its timeout ({:?})",
            cfg.lease,
            cfg.timeout
        );
        // Never a proxy from the environment (HTTP_PROXY, HTTPS_PROXY,
        // ALL_PROXY): the proxy would resolve and connect in the relay's
        // place, so the address rule below would check a name while the
        // proxy reached whatever it names, private ones included.
        let mut http = reqwest::Client::builder().no_proxy();
        if !cfg.allow_private {
            // Every name is resolved through the rule, at each connection.
            http = http.dns_resolver(Arc::new(crate::targets::PublicOnly));
        } else {
            tracing::warn!("the relay delivers to private and loopback addresses (--allow-private-webhooks): a test and demo setting");
        }
        let http = http
            .timeout(cfg.timeout)
            .connect_timeout(cfg.timeout)
            // A receiver's redirect is not followed: the endpoint is the URL
            // the tenant registered, and a 3xx is a failed attempt.
            .redirect(reqwest::redirect::Policy::none())
            // A random tag per relay: with several instances on one
            // database, a receiver's log tells which one sent an attempt,
            // and the tag names no host.
            .user_agent(format!(
                "idem-relay/{} (relay {:08x})",
                env!("CARGO_PKG_VERSION"),
                rand::random::<u32>()
            ))
            .build()?;
        Ok(Self {
            store,
            http,
            slots: Arc::new(Semaphore::new(cfg.concurrency.max(1))),
            cfg: Arc::new(cfg),
            in_flight: Arc::default(),
            freed: Arc::default(),
            settles: Arc::default(),
            settle_writer: Arc::default(),
        })
    }

    /// Runs rounds until `stop` resolves, then waits (up to the timeout) for
    /// the deliveries in flight.
    pub async fn run(self, stop: impl std::future::Future<Output = ()>) {
        tokio::pin!(stop);
        loop {
            let busy = match self.round().await {
                Ok(n) => n > 0,
                Err(e) => {
                    tracing::warn!(error = %idem_api::error::chain(&e), "relay round failed; retrying");
                    false
                }
            };
            if busy {
                // More may be waiting: go again at once.
                tokio::task::yield_now().await;
                continue;
            }
            // Idle, or every slot taken: wait for a slot to free up, or for
            // new messages (polled).
            tokio::select! {
                () = &mut stop => break,
                () = self.freed.notified() => {}
                () = tokio::time::sleep(self.cfg.idle) => {}
            }
        }
        let all = u32::try_from(self.cfg.concurrency.max(1)).unwrap_or(u32::MAX);
        let _ = tokio::time::timeout(self.cfg.timeout, self.slots.acquire_many(all)).await;
    }

    /// One round over every tenant with endpoints; returns the messages
    /// fanned out plus the deliveries started.
    #[tracing::instrument(level = "debug", skip(self))]
    pub async fn round(&self) -> Result<usize, idem_store::Error> {
        let mut work = 0;
        for tenant in self.store.webhook_tenants().await? {
            let endpoints = self
                .store
                .session()
                .await?
                .webhook_endpoints(&tenant)
                .await?;
            if endpoints.is_empty() {
                continue;
            }
            // A read first: a round with nothing new takes no write lock
            // (SQLite's transaction would, against every writer).
            let mut more = !self
                .store
                .session()
                .await?
                .outbox_fetch(&tenant, 1)
                .await?
                .is_empty();
            while more {
                let mut tx = self.store.transaction().await?;
                let n = tx
                    .webhook_fan_out(&tenant, &endpoints, FAN_OUT_BATCH)
                    .await?;
                tx.commit().await?;
                work += n;
                more = n == FAN_OUT_BATCH as usize;
            }
            for e in endpoints {
                work += self.claim_and_send(&tenant, Arc::new(e)).await?;
            }
        }
        Ok(work)
    }

    async fn claim_and_send(
        &self,
        tenant: &TenantId,
        endpoint: Arc<WebhookEndpoint>,
    ) -> Result<usize, idem_store::Error> {
        let slot_key = (tenant.as_str().to_owned(), endpoint.endpoint_id.clone());
        let busy = lock(&self.in_flight).get(&slot_key).copied().unwrap_or(0);
        let free = self.cfg.per_endpoint.saturating_sub(busy);
        // Claim in chunks: with deliveries still running, wait until half the
        // endpoint's slots are free, so a round's four statements move many
        // deliveries, not the one that just finished.
        if free == 0 || (busy > 0 && free < self.cfg.per_endpoint.div_ceil(2)) {
            return Ok(0);
        }
        let claimed = self
            .store
            .session()
            .await?
            .webhook_claim(tenant, &endpoint.endpoint_id, self.cfg.lease, free)
            .await?;
        let n = claimed.len();
        for d in claimed {
            let Ok(permit) = self.slots.clone().acquire_owned().await else {
                break;
            };
            *lock(&self.in_flight).entry(slot_key.clone()).or_default() += 1;
            let (relay, tenant, endpoint, slot_key) = (
                self.clone(),
                tenant.clone(),
                endpoint.clone(),
                slot_key.clone(),
            );
            tokio::spawn(async move {
                relay.deliver(&tenant, &endpoint, &d).await;
                if let Some(c) = lock(&relay.in_flight).get_mut(&slot_key) {
                    *c = c.saturating_sub(1);
                }
                drop(permit);
                relay.freed.notify_one();
            });
        }
        Ok(n)
    }

    /// One attempt, and its outcome written under the attempt's number.
    #[tracing::instrument(level = "debug", skip_all, fields(tenant = %tenant, endpoint = %endpoint.endpoint_id, outbox_id = d.outbox_id, attempt = d.attempts))]
    async fn deliver(&self, tenant: &TenantId, endpoint: &WebhookEndpoint, d: &WebhookDelivery) {
        let id = message_id(tenant, d.outbox_id);
        let now = self.store.now_ms();
        let timestamp = now.div_euclid(1000);
        let body = envelope(d);
        let outcome = match signature(&endpoint.secret, &id, timestamp, body.as_bytes()) {
            None => DeliveryOutcome::Failed {
                status: None,
                error: "the endpoint's signing secret is not base64".into(),
                retry_at_ms: None,
            },
            // A literal address bypasses the resolver: checked here.
            Some(_) if !self.cfg.allow_private && literal_refused(&endpoint.url).is_some() => {
                DeliveryOutcome::Failed {
                    status: None,
                    error: format!(
                        "the endpoint's address is {}: webhooks go to public addresses only",
                        literal_refused(&endpoint.url).unwrap_or_default()
                    ),
                    retry_at_ms: self.retry_at(d, now),
                }
            }
            Some(sig) => {
                let sent = self
                    .http
                    .post(&endpoint.url)
                    .header("content-type", "application/json")
                    .header("webhook-id", &id)
                    .header("webhook-timestamp", timestamp.to_string())
                    .header("webhook-signature", sig)
                    .body(body)
                    .send()
                    .await;
                let later = self.store.now_ms();
                match sent {
                    Ok(r) if r.status().is_success() => {
                        DeliveryOutcome::Delivered(r.status().as_u16())
                    }
                    Ok(r) => DeliveryOutcome::Failed {
                        status: Some(r.status().as_u16()),
                        error: format!("the endpoint answered {}", r.status()),
                        retry_at_ms: self.retry_at(d, later),
                    },
                    Err(e) => DeliveryOutcome::Failed {
                        status: None,
                        error: describe(&e),
                        retry_at_ms: self.retry_at(d, later),
                    },
                }
            }
        };
        if let DeliveryOutcome::Failed {
            error, retry_at_ms, ..
        } = &outcome
        {
            tracing::info!(%error, dead_lettered = retry_at_ms.is_none(), "webhook attempt failed");
        }
        self.settle(Settle {
            tenant: tenant.clone(),
            endpoint_id: endpoint.endpoint_id.clone(),
            delivery: d.clone(),
            outcome,
        })
        .await;
    }

    /// Writes an outcome. Outcomes that finish together are written
    /// together: each delivery queues its own, and whoever takes the
    /// writer's lock writes every one queued by then, the 2xx ones of a
    /// tenant in one statement (on SQLite each write takes the one write
    /// lock the API also waits for: a transaction per delivery halved the
    /// API's throughput, and a statement per delivery held the lock for
    /// the whole batch). A failed write leaves the leases to run out: those
    /// messages are sent again.
    async fn settle(&self, s: Settle) {
        lock(&self.settles).push(s);
        let _writer = self.settle_writer.lock().await;
        let batch = std::mem::take(&mut *lock(&self.settles));
        if batch.is_empty() {
            return; // an earlier writer took ours
        }
        // The 2xx outcomes of a tenant are one statement; a failed attempt
        // (rare, with its own backoff and error) is one of its own.
        let mut delivered: Vec<(&TenantId, Vec<Delivered<'_>>)> = Vec::new();
        let mut failed = Vec::new();
        for s in &batch {
            match s.outcome {
                DeliveryOutcome::Delivered(status) => {
                    let item = (s.endpoint_id.as_str(), &s.delivery, status);
                    match delivered.iter_mut().find(|(t, _)| **t == s.tenant) {
                        Some((_, items)) => items.push(item),
                        None => delivered.push((&s.tenant, vec![item])),
                    }
                }
                DeliveryOutcome::Failed { .. } => failed.push(s),
            }
        }
        let written = async {
            // One statement commits on its own; more share a transaction.
            let mut tx = if delivered.len() + failed.len() > 1 {
                self.store.transaction().await?
            } else {
                self.store.session().await?
            };
            let mut stale = 0usize;
            for (tenant, items) in &delivered {
                stale += items
                    .len()
                    .saturating_sub(tx.webhook_delivered_many(tenant, items).await?);
            }
            for s in failed {
                if !tx
                    .webhook_settle(&s.tenant, &s.endpoint_id, &s.delivery, &s.outcome)
                    .await?
                {
                    stale += 1;
                }
            }
            tx.commit().await?;
            Ok::<_, idem_store::Error>(stale)
        }
        .await;
        match written {
            Ok(0) => {}
            // Their leases ran out and another relay took them: those
            // attempts' outcomes will be written instead (at least once).
            Ok(stale) => tracing::info!(
                stale,
                "deliveries re-claimed meanwhile; these outcomes dropped"
            ),
            Err(e) => {
                tracing::warn!(error = %idem_api::error::chain(&e), outcomes = batch.len(), "recording webhook outcomes failed; their leases will run out and they are sent again")
            }
        }
    }

    /// The next attempt's time, or `None` to dead-letter.
    fn retry_at(&self, d: &WebhookDelivery, now: Millis) -> Option<Millis> {
        let give_up = i64::try_from(self.cfg.give_up.as_millis()).unwrap_or(i64::MAX);
        if now.saturating_sub(d.created_ms) >= give_up {
            return None;
        }
        let delay = backoff(self.cfg.retry_base, d.attempts, rand::random::<f64>());
        Some(now.saturating_add(i64::try_from(delay.as_millis()).unwrap_or(i64::MAX)))
    }
}

/// A 2xx outcome to write: the endpoint, the delivery as claimed, the status.
type Delivered<'a> = (&'a str, &'a WebhookDelivery, u16);

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// The delay after failed attempt `attempt` (from 1): `base × 2^(attempt-1)`,
/// capped at six hours, scaled by a jitter factor in [0.8, 1.2) drawn from
/// `unit` in [0, 1), so relays that failed together do not retry together.
pub fn backoff(base: Duration, attempt: i32, unit: f64) -> Duration {
    let exp = u32::try_from(attempt.saturating_sub(1).clamp(0, 30)).unwrap_or(0);
    let plain = base.saturating_mul(1u32 << exp).min(MAX_DELAY);
    plain.mul_f64(0.8 + 0.4 * unit.clamp(0.0, 1.0))
}

/// The `webhook-id` of an outbox message: the same on every attempt and for
/// every endpoint, unique per database. Tenant ids may hold any Unicode, and
/// a header only visible ASCII, so the tenant enters as a short hash.
pub fn message_id(tenant: &TenantId, outbox_id: i64) -> String {
    use sha2::Digest as _;
    let h = sha2::Sha256::digest(tenant.as_str().as_bytes());
    format!("msg_{}_{outbox_id}", hex::encode(&h[..8]))
}

/// The body: the Standard Webhooks envelope around the queued payload (kept
/// verbatim when it is JSON, as a string otherwise). The timestamp is the
/// message's, so every attempt sends the same bytes.
pub fn envelope(d: &WebhookDelivery) -> String {
    let data = match serde_json::from_str::<&serde_json::value::RawValue>(&d.payload) {
        Ok(raw) => raw.get().to_owned(),
        Err(_) => serde_json::Value::String(d.payload.clone()).to_string(),
    };
    let at = time::OffsetDateTime::from_unix_timestamp(d.created_ms.div_euclid(1000))
        .map(|t| {
            format!(
                "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z",
                t.year(),
                u8::from(t.month()),
                t.day(),
                t.hour(),
                t.minute(),
                t.second()
            )
        })
        .unwrap_or_default();
    format!(
        r#"{{"type":{},"timestamp":{},"data":{data}}}"#,
        serde_json::Value::String(d.topic.clone()),
        serde_json::Value::String(at),
    )
}

/// `v1,` and the base64 HMAC-SHA256 of `id.timestamp.body` under the
/// endpoint's secret (base64, with or without `whsec_`); `None` when the
/// secret is not base64.
pub fn signature(secret_b64: &str, id: &str, timestamp: i64, body: &[u8]) -> Option<String> {
    let b64 = base64::engine::general_purpose::STANDARD;
    let key = b64
        .decode(secret_b64.strip_prefix("whsec_").unwrap_or(secret_b64))
        .ok()?;
    let mut mac = Hmac::<sha2::Sha256>::new_from_slice(&key).ok()?;
    mac.update(id.as_bytes());
    mac.update(b".");
    mac.update(timestamp.to_string().as_bytes());
    mac.update(b".");
    mac.update(body);
    Some(format!("v1,{}", b64.encode(mac.finalize().into_bytes())))
}

/// A transport error in a line, without the request body.
/// Why an endpoint URL whose host is an address literal may not be posted
/// to, if it may not.
fn literal_refused(url: &str) -> Option<&'static str> {
    let u = reqwest::Url::parse(url).ok()?;
    let host = u.host_str()?.trim_start_matches('[').trim_end_matches(']');
    crate::targets::refused(host.parse().ok()?)
}

fn describe(e: &reqwest::Error) -> String {
    let kind = if e.is_timeout() {
        "timed out"
    } else if e.is_connect() {
        "could not connect"
    } else {
        "request failed"
    };
    format!("{kind}: {}", idem_api::error::chain(e))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The Standard Webhooks specification's own example: this secret, id,
    /// timestamp and body sign to this value.
    #[test]
    fn signs_the_specifications_example() {
        let sig = signature(
            "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
            "msg_p5jXN8AQM9LWM0D4loKWxJek",
            1_614_265_330,
            br#"{"test": 2432232314}"#,
        );
        assert_eq!(
            sig.as_deref(),
            Some("v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=")
        );
        assert_eq!(signature("not base64!", "m", 1, b""), None);
    }

    #[test]
    fn backoff_doubles_with_jitter_and_is_capped() {
        let base = Duration::from_secs(5);
        assert_eq!(backoff(base, 1, 0.5), Duration::from_secs(5));
        assert_eq!(backoff(base, 4, 0.5), Duration::from_secs(40));
        assert_eq!(backoff(base, 1, 0.0), Duration::from_secs(4));
        assert!(backoff(base, 1, 0.999) < Duration::from_secs(6));
        assert_eq!(backoff(base, 40, 0.5), MAX_DELAY);
        // Even at the shortest jitter, seventeen delays add up past a day:
        // a message is tried well past the 24 h give-up time, never fewer.
        let total: Duration = (1..=17).map(|a| backoff(base, a, 0.0)).sum();
        assert!(total >= Duration::from_secs(24 * 3600), "{total:?}");
    }

    #[test]
    fn ids_are_stable_ascii_and_per_tenant() {
        let a = TenantId::try_from("loja-do-zé").unwrap_or_else(|_| unreachable!());
        let b = TenantId::try_from("outra").unwrap_or_else(|_| unreachable!());
        assert_eq!(message_id(&a, 7), message_id(&a, 7));
        assert_ne!(message_id(&a, 7), message_id(&b, 7));
        assert!(message_id(&a, 7).bytes().all(|c| c.is_ascii_graphic()));
    }

    #[test]
    fn the_envelope_keeps_json_payloads_verbatim() {
        let d = WebhookDelivery {
            outbox_id: 1,
            topic: "charge.created".into(),
            payload: r#"{"amount_cents":1800}"#.into(),
            created_ms: 0,
            attempts: 1,
        };
        assert_eq!(
            envelope(&d),
            r#"{"type":"charge.created","timestamp":"1970-01-01T00:00:00Z","data":{"amount_cents":1800}}"#
        );
        let text = WebhookDelivery {
            payload: "plain".into(),
            ..d
        };
        assert!(envelope(&text).ends_with(r#""data":"plain"}"#));
    }
}
