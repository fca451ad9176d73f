//! The admin commands: `idem migrate`, `idem purge`, `idem retention`,
//! `idem tenant create` and `idem stats rebuild`. They open the store
//! without a key secret.

use super::args::{
    PurgeArgs, RetentionArgs, StatsRebuildArgs, TenantCreateArgs, TenantListArgs, TenantNameArgs,
    TenantRotateArgs,
};
use super::options::DbArgs;

/// Opens and migrates the store for admin work (no key secret needed).
pub(crate) async fn admin_store(db: &DbArgs) -> anyhow::Result<idem_store::Store> {
    let options = db.timeouts().apply(idem_store::Options::admin());
    // The embedded database is a file under --data-dir, relative to where
    // the command runs: the same command in another directory opens (and
    // creates) another database, whose tokens the running server rejects.
    // So it says which file it opened, and when it has just created it.
    let embedded = db
        .database_url
        .is_none()
        .then(|| db.data_dir.join("idem.db"));
    let existed = embedded.as_ref().is_some_and(|p| p.exists());
    let store = idem_store::Store::connect(&db.url()?, options).await?;
    store.migrate().await?;
    if let Some(path) = embedded {
        let shown = std::fs::canonicalize(&path).unwrap_or(path);
        if existed {
            eprintln!("idem: database {}", shown.display());
        } else {
            eprintln!(
                "idem: created a new database at {}: a server started with another --data-dir \
                 (or in another directory) uses its own, and does not know what this command writes here",
                shown.display()
            );
        }
    }
    Ok(store)
}

/// [`admin_store`] for a command that names `tenant`: an unknown tenant is
/// refused (exit 2, naming it) before anything is written, rather than
/// configured for a tenant no token can reach.
pub(crate) async fn tenant_store(
    db: &DbArgs,
    tenant: &idem_core::TenantId,
) -> anyhow::Result<idem_store::Store> {
    let store = admin_store(db).await?;
    match store.tenant_info(tenant).await {
        Ok(_) => Ok(store),
        Err(idem_store::Error::NotFound) => {
            store.close().await;
            Err(super::Usage(format!(
                "there is no tenant {:?} in this database; `idem tenant list` shows the tenants, `idem tenant create` adds one",
                tenant.as_str()
            ))
            .into())
        }
        Err(e) => {
            store.close().await;
            Err(e.into())
        }
    }
}

/// A tenant id for `idem tenant create`: a valid id that does not start
/// with `_`, which idem keeps for its own tenants (`_dashboard`, the
/// conformance fixture's, the admin's sessions).
fn new_tenant_id(name: &str) -> anyhow::Result<idem_core::TenantId> {
    let tenant = idem_core::TenantId::try_from(name)
        .map_err(|e| super::Usage(format!("tenant {name:?}: {e}")))?;
    if name.starts_with('_') {
        return Err(super::Usage(format!(
            "tenant {name:?}: names starting with `_` are reserved for idem's own tenants"
        ))
        .into());
    }
    Ok(tenant)
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
    let tenant = new_tenant_id(&args.name)?;
    let store = admin_store(&args.db).await?;
    let token = store.create_tenant(&tenant, &args.name).await;
    store.close().await;
    let token = token?;
    println!("{}", token.expose());
    eprintln!("tenant {tenant} created; this token is shown once: store it now");
    Ok(())
}

pub(crate) async fn retention(args: RetentionArgs) -> anyhow::Result<()> {
    let tenant = idem_core::TenantId::try_from(args.tenant.as_str())
        .map_err(|e| super::Usage(format!("tenant {:?}: {e}", args.tenant)))?;
    let store = tenant_store(&args.db, &tenant).await?;
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
    let store = match &args.tenant {
        Some(t) => tenant_store(&args.db, t).await?,
        None => admin_store(&args.db).await?,
    };
    let report = store
        .rebuild_stats(args.tenant.as_ref(), args.since.unwrap_or(0))
        .await;
    store.close().await;
    println!("{}", serde_json::to_string(&report?)?);
    Ok(())
}

pub(crate) async fn tenant_rotate(args: TenantRotateArgs) -> anyhow::Result<()> {
    let store = tenant_store(&args.db, &args.name).await?;
    let token = store
        .rotate_token(&args.name, args.grace.unwrap_or_default())
        .await;
    store.close().await;
    let token = token?;
    println!("{}", token.expose());
    match args.grace {
        Some(g) if !g.is_zero() => eprintln!(
            "tenant {}: new token above, shown once; the previous tokens stop working in {}s",
            args.name,
            g.as_secs()
        ),
        _ => eprintln!(
            "tenant {}: new token above, shown once; the previous tokens no longer work",
            args.name
        ),
    }
    Ok(())
}

pub(crate) async fn tenant_disable(args: TenantNameArgs, disabled: bool) -> anyhow::Result<()> {
    let store = tenant_store(&args.db, &args.name).await?;
    let done = store.set_tenant_disabled(&args.name, disabled).await;
    store.close().await;
    done?;
    eprintln!(
        "tenant {} {}",
        args.name,
        if disabled {
            "disabled: its tokens get 401 within a second; its data stays"
        } else {
            "enabled: its live tokens work again"
        }
    );
    Ok(())
}

pub(crate) async fn tenant_list(args: TenantListArgs) -> anyhow::Result<()> {
    let store = admin_store(&args.db).await?;
    let list = store.tenant_list().await;
    store.close().await;
    let day = |ms: i64| app::i18n::iso_utc(ms);
    for t in list? {
        if args.json {
            println!(
                "{}",
                serde_json::json!({
                    "tenant": t.tenant.as_str(),
                    "name": t.name,
                    "created_utc": day(t.created_ms),
                    "tokens": t.tokens,
                    "newest_token_utc": t.newest_token_ms.map(day),
                    "disabled": t.disabled_ms.is_some(),
                    "disabled_utc": t.disabled_ms.map(day),
                })
            );
        } else {
            println!(
                "{}\tcreated {}\t{} token(s){}{}",
                t.tenant,
                day(t.created_ms),
                t.tokens,
                t.newest_token_ms
                    .map(|ms| format!(", newest {}", day(ms)))
                    .unwrap_or_default(),
                if t.disabled_ms.is_some() {
                    "\tDISABLED"
                } else {
                    ""
                }
            );
        }
    }
    Ok(())
}
