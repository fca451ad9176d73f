//! The admin commands: `idem migrate`, `idem purge`, `idem retention`,
//! `idem tenant create` and `idem stats rebuild`. They open the store
//! without a key secret.

use super::args::{PurgeArgs, RetentionArgs, StatsRebuildArgs, TenantCreateArgs};
use super::options::DbArgs;

/// Opens and migrates the store for admin work (no key secret needed).
pub(crate) async fn admin_store(db: &DbArgs) -> anyhow::Result<idem_store::Store> {
    let store = idem_store::Store::connect(&db.url()?, idem_store::Options::admin()).await?;
    store.migrate().await?;
    Ok(store)
}

pub(crate) async fn migrate(args: DbArgs) -> anyhow::Result<()> {
    let store = admin_store(&args).await?;
    tracing::info!(backend = ?store.backend(), "migrations applied");
    store.close().await;
    Ok(())
}

pub(crate) async fn purge(args: PurgeArgs) -> anyhow::Result<()> {
    let store = admin_store(&args.db).await?;
    let report = store.purge(args.batch).await?;
    println!("{}", serde_json::to_string(&report)?);
    store.close().await;
    Ok(())
}

pub(crate) async fn tenant_create(args: TenantCreateArgs) -> anyhow::Result<()> {
    let tenant = idem_core::TenantId::try_from(args.name.as_str())?;
    let store = admin_store(&args.db).await?;
    let token = store.create_tenant(&tenant, &args.name).await;
    store.close().await;
    let token = token?;
    println!("{}", token.expose());
    eprintln!("tenant {tenant} created; this token is shown once: store it now");
    Ok(())
}

pub(crate) async fn retention(args: RetentionArgs) -> anyhow::Result<()> {
    let tenant = idem_core::TenantId::try_from(args.tenant.as_str())?;
    let store = admin_store(&args.db).await?;
    let mut s = store.session().await?;
    let mut r = s.retention(&tenant).await?;
    if args.intents.is_some() || args.actions.is_some() || args.http_keys.is_some() {
        r.intent_ms = args.intents.unwrap_or(r.intent_ms);
        r.action_ms = args.actions.unwrap_or(r.action_ms);
        r.http_ms = args.http_keys.unwrap_or(r.http_ms);
        s.set_retention(&tenant, &r).await?;
    }
    drop(s);
    println!(
        "{}",
        serde_json::json!({
            "tenant": tenant.as_str(),
            "intents_ms": r.intent_ms,
            "actions_ms": r.action_ms,
            "http_keys_ms": r.http_ms,
        })
    );
    store.close().await;
    Ok(())
}

pub(crate) async fn stats_rebuild(args: StatsRebuildArgs) -> anyhow::Result<()> {
    let store = admin_store(&args.db).await?;
    let report = store
        .rebuild_stats(args.tenant.as_ref(), args.since.unwrap_or(0))
        .await;
    store.close().await;
    println!("{}", serde_json::to_string(&report?)?);
    Ok(())
}
