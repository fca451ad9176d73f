//! `idem webhook add|list|remove` and `idem relay`: the endpoints the outbox
//! relay delivers to, and the relay on its own. Admin commands: whoever can
//! run them can reach the database; no API route adds an endpoint.

use super::admin::{admin_store as store, tenant_store};
use super::args::{RelayCmdArgs, WebhookAddArgs, WebhookListArgs, WebhookRemoveArgs};
use base64::Engine as _;
use idem_store::WebhookEndpoint;

/// A topic: lowercase letters, digits, `.`, `_` and `-`, 1 to 100 of them.
fn topic_ok(t: &str) -> bool {
    (1..=100).contains(&t.len())
        && t.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"._-".contains(&b))
}

/// Checks an endpoint URL: absolute http(s) with a host, no credentials.
pub fn check_url(url: &str) -> Result<reqwest::Url, String> {
    let u = reqwest::Url::parse(url).map_err(|e| format!("URL {url:?} is not valid: {e}"))?;
    if !matches!(u.scheme(), "http" | "https") {
        return Err(format!("URL {url:?} must be http or https"));
    }
    if u.host_str().is_none_or(str::is_empty) {
        return Err(format!("URL {url:?} has no host"));
    }
    if !u.username().is_empty() || u.password().is_some() {
        return Err(format!(
            "URL {url:?} carries credentials; the signature authenticates the relay"
        ));
    }
    Ok(u)
}

pub(crate) async fn add(args: WebhookAddArgs) -> anyhow::Result<()> {
    let url = check_url(&args.url).map_err(super::Usage)?;
    if !args.allow_private_webhooks {
        let resolved = crate::targets::check_url_target(&url)
            .await
            .map_err(super::Usage)?;
        if !resolved {
            eprintln!(
                "note: {} does not resolve from here now; the relay resolves it at every delivery and refuses private addresses then",
                url.host_str().unwrap_or_default()
            );
        }
    }
    let events = match args.events.as_deref().map(str::trim) {
        None | Some("*") => "*".to_owned(),
        Some(list) => {
            let topics: Vec<&str> = list.split(',').map(str::trim).collect();
            if let Some(bad) = topics.iter().find(|t| !topic_ok(t)) {
                return Err(super::Usage(format!(
                    "--events: {bad:?} is not a topic (lowercase letters, digits, '.', '_', '-'; e.g. charge.created)"
                ))
                .into());
            }
            topics.join(",")
        }
    };
    let secret = format!(
        "whsec_{}",
        base64::engine::general_purpose::STANDARD.encode(rand::random::<[u8; 24]>())
    );
    let store = tenant_store(&args.db, &args.tenant).await?;
    let endpoint = WebhookEndpoint {
        endpoint_id: format!("ep_{}", hex::encode(rand::random::<[u8; 8]>())),
        url: url.to_string(),
        events,
        secret: secret.trim_start_matches("whsec_").to_owned(),
        created_ms: store.now_ms(),
    };
    let added = async {
        store
            .session()
            .await?
            .add_webhook_endpoint(&args.tenant, &endpoint)
            .await
    }
    .await;
    store.close().await;
    added?;
    println!(
        "{}",
        serde_json::json!({
            "endpoint_id": endpoint.endpoint_id,
            "url": endpoint.url,
            "events": endpoint.events,
            "secret": secret,
        })
    );
    eprintln!(
        "endpoint {} added for {}; its signing secret is shown once: store it now",
        endpoint.endpoint_id, args.tenant
    );
    Ok(())
}

pub(crate) async fn list(args: WebhookListArgs) -> anyhow::Result<()> {
    let store = tenant_store(&args.db, &args.tenant).await?;
    let endpoints = async { store.session().await?.webhook_endpoints(&args.tenant).await }.await;
    store.close().await;
    for e in endpoints? {
        println!("{}", serde_json::to_string(&e)?);
    }
    Ok(())
}

pub(crate) async fn remove(args: WebhookRemoveArgs) -> anyhow::Result<()> {
    let store = tenant_store(&args.db, &args.tenant).await?;
    let removed = async {
        store
            .session()
            .await?
            .remove_webhook_endpoint(&args.tenant, &args.endpoint_id)
            .await
    }
    .await;
    store.close().await;
    match removed {
        Ok(()) => {
            eprintln!("endpoint {} removed", args.endpoint_id);
            Ok(())
        }
        Err(idem_store::Error::NotFound) => Err(super::Usage(format!(
            "tenant {} has no endpoint {:?}",
            args.tenant, args.endpoint_id
        ))
        .into()),
        Err(e) => Err(e.into()),
    }
}

/// `idem relay`: the relay alone, until SIGTERM or Ctrl-C.
pub(crate) async fn relay(args: RelayCmdArgs) -> anyhow::Result<()> {
    let cfg = args
        .relay
        .config()
        .map_err(|e| super::Usage(e.to_string()))?;
    let store = store(&args.db).await?;
    let relay = crate::relay::Relay::new(store.clone(), cfg)?;
    tracing::info!(backend = ?store.backend(), "relaying the outbox to webhook endpoints");
    relay.run(crate::http::shutdown()).await;
    store.close().await;
    Ok(())
}
