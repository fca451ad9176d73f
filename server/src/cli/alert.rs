//! `idem alert add|list|remove`: a tenant's alerts, which `idem serve`
//! evaluates (crate::alerts). Admin commands, like `idem webhook`.

use super::admin::tenant_store;
use super::args::{AlertAddArgs, AlertRemoveArgs, WebhookListArgs};
use crate::alerts::Metric;
use idem_store::Alert;
use rust_decimal::Decimal;
use std::str::FromStr;

/// The longest window an alert measures over (the hour buckets' keep).
const MAX_WINDOW_MS: i64 = 30 * 86_400_000;

fn millis(d: std::time::Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

pub(crate) async fn add(args: AlertAddArgs) -> anyhow::Result<()> {
    let usage = |m: String| anyhow::Error::from(super::Usage(m));
    if Metric::parse(&args.metric).is_none() {
        return Err(usage(format!(
            "--metric {:?}: use one of {}",
            args.metric,
            Metric::NAMES.join(", ")
        )));
    }
    let above = Decimal::from_str(args.above.trim())
        .ok()
        .filter(|d| !d.is_sign_negative())
        .ok_or_else(|| {
            usage(format!(
                "--above {:?}: a number of 0 or more, with a point for decimals (e.g. 2.5)",
                args.above
            ))
        })?;
    let window_ms = millis(args.window);
    if !(1..=MAX_WINDOW_MS).contains(&window_ms) {
        return Err(usage("--window: from 1ms to 30d".into()));
    }
    let store = tenant_store(&args.db, &args.tenant).await?;
    let alert = Alert {
        alert_id: format!("al_{}", hex::encode(rand::random::<[u8; 8]>())),
        metric: args.metric.clone(),
        above: idem_core::scenario::canonical(above).to_string(),
        for_ms: args.hold.map_or(0, millis),
        window_ms,
        endpoint_id: args.webhook.clone(),
        state: idem_store::AlertState::Ok,
        since_ms: None,
        last_value: None,
        evaluated_ms: None,
        created_ms: store.now_ms(),
    };
    let added = async { store.session().await?.add_alert(&args.tenant, &alert).await }.await;
    store.close().await;
    match added {
        Ok(()) => {
            println!("{}", serde_json::to_string(&alert)?);
            eprintln!(
                "alert {} added for {}: `idem serve` evaluates it",
                alert.alert_id, args.tenant
            );
            Ok(())
        }
        Err(idem_store::Error::NotFound) => Err(usage(format!(
            "--webhook {:?}: tenant {} has no such endpoint (idem webhook list {})",
            args.webhook, args.tenant, args.tenant
        ))),
        Err(e) => Err(e.into()),
    }
}

pub(crate) async fn list(args: WebhookListArgs) -> anyhow::Result<()> {
    let store = tenant_store(&args.db, &args.tenant).await?;
    let alerts = async { store.session().await?.alerts(&args.tenant).await }.await;
    store.close().await;
    for a in alerts? {
        println!("{}", serde_json::to_string(&a)?);
    }
    Ok(())
}

pub(crate) async fn remove(args: AlertRemoveArgs) -> anyhow::Result<()> {
    let store = tenant_store(&args.db, &args.tenant).await?;
    let removed = async {
        store
            .session()
            .await?
            .remove_alert(&args.tenant, &args.alert_id)
            .await
    }
    .await;
    store.close().await;
    match removed {
        Ok(()) => {
            eprintln!("alert {} removed", args.alert_id);
            Ok(())
        }
        Err(idem_store::Error::NotFound) => Err(super::Usage(format!(
            "tenant {} has no alert {:?}",
            args.tenant, args.alert_id
        ))
        .into()),
        Err(e) => Err(e.into()),
    }
}
