//! The live duplicate monitor: `/live` (page), `/live/data.json`,
//! `/live/events` (server-sent events), `/live/fragment` (polling) and
//! `/live/login`.
//!
//! The numbers are read from the database on every refresh: the statistics
//! rollups (every write's counts reach them through a journal committed with
//! the write, folded twice a second and before each read), and the actions table
//! for what stands now. So every instance on one database shows the same
//! numbers, whichever instance took the writes. Identical refreshes within
//! half a second share one read, so five open dashboards cost the database
//! what one does.
//!
//! Access: on a loopback address with no admin token configured, the
//! monitor is open and shows every tenant. Otherwise it needs a token, as
//! `Authorization: Bearer` or the `idem_live` cookie that `/live/login`
//! sets: the admin token (`--admin-token`) sees every tenant; a tenant's API
//! token sees only that tenant, whatever it asks for.

use super::error::ApiError;
use super::state::LiveState;
pub mod action;
pub mod data;
pub mod render;

use app::live::LiveMarkup;
use axum::extract::{Query, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Redirect, Response};
use axum::Form;
use data::{
    Counts, DuplicateRate, LiveData, LiveHorizon, LivePoint, LiveRow, LiveUncertain,
    LiveUnresolved, Window,
};
use futures_util::stream::{Stream, StreamExt};
use idem_core::locale::Locale;
use idem_core::TenantId;
use idem_store::stats::Granularity;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The cookie `/live/login` sets.
pub const COOKIE: &str = "idem_live";
/// Uncertain keys listed per tenant.
const UNCERTAIN_LISTED: u32 = 20;
/// Tenants an admin's "all tenants" view reads, at most.
const MAX_TENANTS: usize = 50;
/// How long one read serves identical refreshes.
const SHARE_FOR: Duration = Duration::from_millis(500);
/// Tenants read at once for the admin's view (each on its own connection).
const PARALLEL_READS: usize = 4;
/// How often a feed looks for new numbers.
const TICK: Duration = Duration::from_millis(500);
/// A feed sends at least this often, so a browser can tell a quiet feed
/// from a dead one.
const HEARTBEAT: Duration = Duration::from_secs(2);

/// Who is looking.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Viewer {
    /// Every tenant.
    Admin,
    /// One tenant only.
    Tenant(TenantId),
}

/// What a request presents: a bearer token, else the login session's id.
enum Presented {
    Token(String),
    Session(String),
}

fn presented(headers: &HeaderMap) -> Option<Presented> {
    super::extract::bearer(headers)
        .ok()
        .map(|t| Presented::Token(t.to_owned()))
        .or_else(|| super::extract::cookie(headers, COOKIE).map(Presented::Session))
}

/// The viewer a request speaks for: `Ok(None)` when it may not look.
/// A presented token or session always decides (a tenant token narrows
/// even the open monitor to its tenant); a bad one is refused, not ignored.
async fn viewer(state: &LiveState, headers: &HeaderMap) -> Result<Option<Viewer>, ApiError> {
    match presented(headers) {
        Some(Presented::Token(t)) if state.access.admin.as_ref().is_some_and(|a| a.matches(&t)) => {
            Ok(Some(Viewer::Admin))
        }
        Some(Presented::Token(t)) => match state.api.store.authenticate(&t).await {
            Ok(tenant) => Ok(Some(Viewer::Tenant(tenant))),
            Err(idem_store::Error::NotFound | idem_store::Error::TenantDisabled(_)) => Ok(None),
            Err(e) => Err(e.into()),
        },
        Some(Presented::Session(id)) => match state.api.store.live_session(&id).await {
            // An admin session holds while the admin token it was opened
            // with is the one configured now.
            Ok(idem_store::SessionOwner::Admin { token_digest }) => Ok(state
                .access
                .admin
                .as_ref()
                .filter(|a| a.digest_hex() == token_digest)
                .map(|_| Viewer::Admin)),
            Ok(idem_store::SessionOwner::Tenant { tenant, .. }) => Ok(Some(Viewer::Tenant(tenant))),
            Err(idem_store::Error::NotFound | idem_store::Error::TenantDisabled(_)) => Ok(None),
            Err(e) => Err(e.into()),
        },
        None if state.access.open_to(headers) => Ok(Some(Viewer::Admin)),
        None => Ok(None),
    }
}

/// The form token of a request's login session: a digest of the session
/// id, so a page elsewhere, which cannot read the HttpOnly cookie, cannot
/// know it. `None` without a session (a bearer token or the open monitor,
/// where no cookie rides along and the Origin check suffices).
pub fn csrf_token(headers: &HeaderMap) -> Option<String> {
    if super::extract::bearer(headers).is_ok() {
        return None;
    }
    let id = super::extract::cookie(headers, COOKIE)?;
    let mut h = <sha2::Sha256 as sha2::Digest>::new();
    sha2::Digest::update(&mut h, b"idem live form v1\n");
    sha2::Digest::update(&mut h, id.as_bytes());
    Some(hex::encode(&sha2::Digest::finalize(h)[..16]))
}

/// Whether a form post carries its session's form token (or needs none).
pub fn csrf_ok(headers: &HeaderMap, sent: Option<&str>) -> bool {
    match csrf_token(headers) {
        None => true,
        // Constant time: the comparison says nothing of how much matched.
        Some(expected) => {
            sent.is_some_and(|s| super::guard::constant_time_eq(s.as_bytes(), expected.as_bytes()))
        }
    }
}

/// The monitor's query: `tenant`, `window` (1h, 24h, 7d, 30d), `lang`.
#[derive(Debug, Clone, Default)]
pub struct LiveQuery {
    /// A tenant to narrow to.
    pub tenant: Option<String>,
    /// The window.
    pub window: Window,
    /// The page's language.
    pub locale: Locale,
}

impl LiveQuery {
    fn parse(pairs: &[(String, String)], locale: Locale) -> Result<Self, String> {
        let mut q = LiveQuery {
            locale,
            ..Self::default()
        };
        for (k, v) in pairs {
            match k.as_str() {
                "tenant" if v.is_empty() => q.tenant = None,
                "tenant" => {
                    TenantId::try_from(v.as_str()).map_err(|e| format!("tenant: {e}"))?;
                    q.tenant = Some(v.clone());
                }
                "window" => {
                    q.window = Window::parse(v)
                        .ok_or_else(|| format!("window={v:?}: use 1h, 24h, 7d or 30d"))?;
                }
                "lang" => {
                    if let Some(l) = Locale::from_tag(v) {
                        q.locale = l;
                    }
                }
                _ => {}
            }
        }
        Ok(q)
    }

    fn feed(&self, path: &str) -> String {
        let mut s = format!(
            "{path}?window={}&lang={}",
            self.window.as_str(),
            self.locale.tag()
        );
        if let Some(t) = &self.tenant {
            s.push('&');
            s.push_str(
                &form_urlencoded::Serializer::new(String::new())
                    .append_pair("tenant", t)
                    .finish(),
            );
        }
        s
    }
}

/// The tenants a viewer sees for a query; a tenant asking for another is
/// refused (403), never shown an empty page that would hint either way.
async fn scope(
    state: &LiveState,
    viewer: &Viewer,
    q: &LiveQuery,
) -> Result<Vec<TenantId>, ApiError> {
    match (viewer, &q.tenant) {
        (Viewer::Tenant(own), Some(asked)) if asked != own.as_str() => Err(ApiError::body(
            StatusCode::FORBIDDEN,
            "this token sees only its own tenant: drop the tenant parameter or ask for your own",
        )),
        (Viewer::Tenant(own), _) => Ok(vec![own.clone()]),
        (Viewer::Admin, Some(t)) => Ok(vec![TenantId::try_from(t.as_str())
            .map_err(|e| ApiError::unprocessable(format!("tenant: {e}")))?]),
        (Viewer::Admin, None) => every_tenant(state).await,
    }
}

/// Every tenant an admin sees (the dashboard's own tenant left out), at
/// most [`MAX_TENANTS`].
async fn every_tenant(state: &LiveState) -> Result<Vec<TenantId>, ApiError> {
    let mut all = state.api.store.tenants().await?;
    all.retain(|t| t.as_str() != super::state::SCENARIO_TENANT);
    all.truncate(MAX_TENANTS);
    Ok(all)
}

/// Reads the numbers (or reuses a read younger than [`SHARE_FOR`]).
pub async fn snapshot(
    state: &LiveState,
    viewer: &Viewer,
    q: &LiveQuery,
) -> Result<Arc<LiveData>, ApiError> {
    let tenants = scope(state, viewer, q).await?;
    // The asked tenant is part of the key: with one tenant, "all" and that
    // tenant read the same rows but render different controls.
    let cache_key = format!(
        "{}|{}|{}|{}",
        matches!(viewer, Viewer::Admin),
        q.window.as_str(),
        q.tenant.as_deref().unwrap_or(""),
        tenants
            .iter()
            .map(TenantId::as_str)
            .collect::<Vec<_>>()
            .join(",")
    );
    // Fresh while both clocks say so: the wall clock (identical refreshes
    // within half a second share a read) and the store's, which decides
    // when a lease runs out (a store clock moved forward, as tests move it,
    // makes the shared read stale at once).
    let share_ms = i64::try_from(SHARE_FOR.as_millis()).unwrap_or(i64::MAX);
    let store_now = state.api.store.now_ms();
    if let Some((at, data)) = lock(&state.cache).get(&cache_key) {
        let age_ms = store_now - data.generated_ms;
        if at.elapsed() < SHARE_FOR && (0..share_ms).contains(&age_ms) {
            return Ok(data.clone());
        }
    }
    let mut data = read(state, &tenants, q.window).await?;
    data.admin = matches!(viewer, Viewer::Admin);
    data.tenant = q.tenant.clone();
    // Filtered to one tenant, the select still offers the others.
    if data.admin && q.tenant.is_some() {
        data.tenant_choices = every_tenant(state)
            .await?
            .iter()
            .map(|t| t.as_str().to_owned())
            .collect();
    }
    let data = Arc::new(data);
    let mut cache = lock(&state.cache);
    cache.retain(|_, (at, _)| at.elapsed() < SHARE_FOR);
    cache.insert(cache_key, (Instant::now(), data.clone()));
    Ok(data)
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

#[tracing::instrument(skip_all, fields(tenants = tenants.len(), window = window.as_str()))]
async fn read(
    state: &LiveState,
    tenants: &[TenantId],
    window: Window,
) -> Result<LiveData, ApiError> {
    let store = &state.api.store;
    let catalog = state.api.catalog.clone();
    let now = store.now_ms();
    let granularity = match window {
        Window::Hour => Granularity::Minute,
        Window::Day | Window::Week => Granularity::Hour,
        Window::Month => Granularity::Day,
    };
    let bucket = window.bucket_ms();
    let to = now + 1;
    let from = granularity.floor(now - window.len_ms() + bucket);
    let mut data = LiveData {
        generated_ms: now,
        window,
        from_ms: from,
        to_ms: to,
        bucket_ms: bucket,
        tenants: tenants.iter().map(|t| t.as_str().to_owned()).collect(),
        ..LiveData::default()
    };
    let mut series: BTreeMap<i64, LivePoint> = BTreeMap::new();
    let mut start = from;
    while start < to {
        series.insert(
            start,
            LivePoint {
                start_ms: start,
                ..LivePoint::default()
            },
        );
        start += bucket;
    }
    let mut max_delay: Option<i64> = None;
    let mut p99: Option<i64> = None;
    let mut retention: Option<i64> = None;
    // One fold of the statistics journal, then every tenant read on a
    // connection of its own, a few at a time.
    store.flush_stats().await?;
    let reads = futures_util::stream::iter(tenants.iter().cloned())
        .map(|tenant| async move {
            let mut s = store.session().await?;
            let report = s.stats(&tenant, granularity, from, to).await?;
            let live = s.live_actions(&tenant, now, UNCERTAIN_LISTED).await?;
            let retention = s.retention(&tenant).await?;
            let webhooks = s.webhook_counts(&tenant).await?;
            let alerts = s.alerts(&tenant).await?;
            Ok::<_, idem_store::Error>((tenant, report, live, retention, webhooks, alerts))
        })
        .buffered(PARALLEL_READS)
        .collect::<Vec<_>>()
        .await;
    for read in reads {
        let (tenant, report, live, r, webhooks, alerts) = read?;
        data.alerts_firing
            .extend(
                alerts
                    .into_iter()
                    .filter(|a| a.state == "firing")
                    .map(|a| data::LiveAlert {
                        tenant: tenant.as_str().to_owned(),
                        alert_id: a.alert_id,
                        metric: a.metric,
                        above: a.above,
                        value: a.last_value,
                        since_ms: a.since_ms,
                    }),
            );
        data.webhooks.add(&webhooks, now);
        let mut per_action: BTreeMap<String, Counts> = BTreeMap::new();
        for b in &report.buckets {
            let c = b.counts.clone();
            per_action.entry(b.action.clone()).or_default().add(&c);
            if let Some(p) = series.get_mut(&b.start_ms) {
                p.deliveries += c.deliveries;
                p.redeliveries += c.redeliveries;
                p.intents += c.intents;
                p.redelivered_intents += c.redelivered_intents;
            }
        }
        // An action with unknown outcomes gets its row even when the window
        // saw no traffic for it: the table lists what needs a look.
        for (action, _) in &live.uncertain_by_action {
            per_action.entry(action.clone()).or_default();
        }
        for (action, c) in per_action {
            data.totals.add(&c);
            let uncertain_now = live
                .uncertain_by_action
                .iter()
                .find(|(a, _)| *a == action)
                .map_or(0, |(_, n)| *n);
            data.rows.push(LiveRow {
                tenant: tenant.as_str().to_owned(),
                action,
                counts: c,
                uncertain_now,
            });
        }
        data.horizon.measured += report.delay.count;
        max_delay = max_delay.max(report.delay.max_ms);
        p99 = p99.max(report.delay.p99_ms);
        retention = Some(retention.map_or(r.intent_ms, |x: i64| x.min(r.intent_ms)));
        data.in_flight += live.in_flight;
        data.uncertain += live.uncertain;
        if live.unresolved > 0 {
            data.unresolved.push(LiveUnresolved {
                tenant: tenant.as_str().to_owned(),
                count: live.unresolved,
                oldest_started_ms: live.oldest_unresolved_ms,
                oldest_age_ms: live.oldest_unresolved_ms.map(|t| (now - t).max(0)),
            });
        }
        data.uncertain_keys.extend(
            live.uncertain_keys
                .into_iter()
                .map(|u| LiveUncertain::new(tenant.as_str(), u, &catalog, now)),
        );
    }
    data.uncertain_keys
        .sort_by_key(|u| std::cmp::Reverse(u.lease_until_ms.unwrap_or(u.started_ms)));
    data.uncertain_keys.truncate(UNCERTAIN_LISTED as usize);
    data.series = series.into_values().collect();
    data.horizon = LiveHorizon {
        measured: data.horizon.measured,
        p99_ms: p99,
        max_ms: max_delay,
        retention_ms: retention,
        warning: matches!((retention, max_delay), (Some(r), Some(m)) if r < m.saturating_mul(2)),
    };
    data.duplicate_rate_pct = data
        .totals
        .duplicate_rate_pct()
        .map(idem_core::scenario::canonical);
    // Conversations are business intents only: the HTTP-key counters and
    // the lease sweeps' bucket are not conversations.
    let mut business = Counts::default();
    for r in data
        .rows
        .iter()
        .filter(|r| data::is_conversation_action(&r.action))
    {
        business.add(&r.counts);
    }
    // The tenant the numbers are from, when one alone is in view (asked
    // for, or a tenant's own token, which sees only itself).
    let scope = match tenants {
        [one] => Some(one.as_str()),
        _ => None,
    };
    data.use_numbers = data::use_numbers_href(window, &business, scope, None);
    Ok(data)
}

fn query_of(
    pairs: Result<Query<Vec<(String, String)>>, axum::extract::rejection::QueryRejection>,
    headers: &HeaderMap,
) -> Result<LiveQuery, ApiError> {
    let Query(pairs) = pairs.map_err(|e| ApiError::bad_request(e.body_text()))?;
    let cookie_locale = super::extract::cookie_locale(headers);
    LiveQuery::parse(&pairs, cookie_locale).map_err(ApiError::unprocessable)
}

async fn authorized(state: &LiveState, headers: &HeaderMap) -> Result<Viewer, ApiError> {
    viewer(state, headers)
        .await?
        .ok_or_else(|| ApiError::unauthorized(presented(headers).is_some()))
}

/// `GET /live/data.json`: the numbers as JSON.
pub async fn data_json(
    State(state): State<LiveState>,
    headers: HeaderMap,
    pairs: Result<Query<Vec<(String, String)>>, axum::extract::rejection::QueryRejection>,
) -> Result<Response, ApiError> {
    let q = query_of(pairs, &headers)?;
    let v = authorized(&state, &headers).await?;
    let data = snapshot(&state, &v, &q).await?;
    Ok((
        [(header::CACHE_CONTROL, HeaderValue::from_static("no-store"))],
        axum::Json(&*data),
    )
        .into_response())
}

/// `GET /live/charts/{name}.svg?window=&tenant=&lang=` (and `format=png`,
/// `width=`): the monitor's charts (`deliveries`, `rate`) as images, with
/// the same access rules as the page. They change with every read, so a
/// client may keep one for a few seconds, privately; the `ETag` is a hash
/// of the drawing.
pub async fn chart(
    State(state): State<LiveState>,
    axum::extract::Path(file): axum::extract::Path<String>,
    headers: HeaderMap,
    pairs: Result<Query<Vec<(String, String)>>, axum::extract::rejection::QueryRejection>,
) -> Result<Response, ApiError> {
    let value = |k: &str| {
        pairs.as_ref().ok().and_then(|q| {
            q.0.iter()
                .rev()
                .find(|(key, _)| key == k)
                .map(|(_, v)| v.to_owned())
        })
    };
    let (format, width) = (value("format"), value("width"));
    let (name, format) = match (file.strip_suffix(".svg"), file.strip_suffix(".png")) {
        (Some(n), _) => (
            n,
            crate::charts::Format::parse(format.as_deref(), width.as_deref()),
        ),
        (None, Some(n)) => (
            n,
            crate::charts::Format::parse(Some("png"), width.as_deref()),
        ),
        (None, None) => ("", Err(String::new())),
    };
    let Some(index) = app::charts::LIVE_NAMES.iter().position(|n| *n == name) else {
        return Err(ApiError::body(
            StatusCode::NOT_FOUND,
            "no such chart: the monitor's charts are deliveries.svg and rate.svg",
        ));
    };
    let format = format.map_err(ApiError::unprocessable)?;
    let q = query_of(pairs, &headers)?;
    let v = authorized(&state, &headers).await?;
    let data = snapshot(&state, &v, &q).await?;
    let points: Vec<crate::charts::SeriesPoint> = data
        .series
        .iter()
        .map(|p| crate::charts::SeriesPoint {
            start_ms: p.start_ms,
            deliveries: p.deliveries,
            redeliveries: p.redeliveries,
            intents: p.intents,
            redelivered_intents: p.redelivered_intents,
        })
        .collect();
    let [deliveries, rate] = render::live_figures(&data, q.locale);
    let figure = if index == 0 { deliveries } else { rate };
    let daily = matches!(q.window, Window::Week | Window::Month);
    let locale = q.locale;
    let chart_name = name.to_owned();
    let drawn = super::charts::draw(format, move || {
        crate::charts::live_chart(&chart_name, figure, &points, daily, locale, format)
    })
    .await;
    let body = match drawn {
        Some(Ok(body)) => body,
        Some(Err(e)) => {
            tracing::error!(error = %e, chart = name, "cannot draw a monitor chart");
            return Err(ApiError::body(
                StatusCode::INTERNAL_SERVER_ERROR,
                "the chart could not be drawn",
            ));
        }
        None => return Err(ApiError::body(StatusCode::NOT_FOUND, "no such chart")),
    };
    let etag = {
        use sha2::Digest;
        format!("\"{}\"", hex::encode(&sha2::Sha256::digest(&body)[..12]))
    };
    let cache = (header::CACHE_CONTROL, "private, max-age=5".to_owned());
    if super::charts::if_none_match(&headers, &etag) {
        return Ok((StatusCode::NOT_MODIFIED, [(header::ETAG, etag), cache]).into_response());
    }
    Ok((
        [
            (header::CONTENT_TYPE, format.content_type().to_owned()),
            (header::ETAG, etag),
            cache,
        ],
        body,
    )
        .into_response())
}

/// Which markup a feed carries.
fn markup(data: &LiveData, panel: bool, l: Locale) -> String {
    if panel {
        render::panel_html(data, l)
    } else {
        render::live_html(data, l)
    }
}

fn is_panel(
    pairs: &Result<Query<Vec<(String, String)>>, axum::extract::rejection::QueryRejection>,
) -> bool {
    pairs
        .as_ref()
        .map(|q| q.0.iter().any(|(k, v)| k == "view" && v == "panel"))
        .unwrap_or(false)
}

/// `GET /live/fragment`: the current markup, for browsers that poll.
pub async fn fragment(
    State(state): State<LiveState>,
    headers: HeaderMap,
    pairs: Result<Query<Vec<(String, String)>>, axum::extract::rejection::QueryRejection>,
) -> Result<Response, ApiError> {
    let panel = is_panel(&pairs);
    let q = query_of(pairs, &headers)?;
    let v = authorized(&state, &headers).await?;
    let data = snapshot(&state, &v, &q).await?;
    Ok((
        [
            (
                header::CONTENT_TYPE,
                HeaderValue::from_static("text/html; charset=utf-8"),
            ),
            (header::CACHE_CONTROL, HeaderValue::from_static("no-store")),
        ],
        markup(&data, panel, q.locale),
    )
        .into_response())
}

/// `GET /live/events`: server-sent events. `snapshot` carries new markup
/// when the numbers change; `heartbeat` comes at least every 2 s otherwise;
/// `trouble` says the database could not be read (the page shows stale).
pub async fn events(
    State(state): State<LiveState>,
    headers: HeaderMap,
    pairs: Result<Query<Vec<(String, String)>>, axum::extract::rejection::QueryRejection>,
) -> Result<Sse<impl Stream<Item = Result<Event, std::convert::Infallible>>>, ApiError> {
    let panel = is_panel(&pairs);
    let q = query_of(pairs, &headers)?;
    let v = authorized(&state, &headers).await?;
    // Refused before the stream opens, so a bad query gets a status.
    scope(&state, &v, &q).await?;
    struct Feed {
        state: LiveState,
        viewer: Viewer,
        q: LiveQuery,
        panel: bool,
        last: Option<i64>,
        last_html: String,
        sent: Instant,
        first: bool,
    }
    let feed = Feed {
        state,
        viewer: v,
        q,
        panel,
        last: None,
        last_html: String::new(),
        sent: Instant::now(),
        first: true,
    };
    let stream = futures_util::stream::unfold(feed, |mut f| async move {
        loop {
            if !f.first {
                tokio::time::sleep(TICK).await;
            }
            f.first = false;
            match snapshot(&f.state, &f.viewer, &f.q).await {
                Ok(data) => {
                    if f.last == Some(data.generated_ms) && f.sent.elapsed() < HEARTBEAT {
                        continue;
                    }
                    f.last = Some(data.generated_ms);
                    let html = markup(&data, f.panel, f.q.locale);
                    let changed = html != f.last_html;
                    if !changed && f.sent.elapsed() < HEARTBEAT {
                        continue;
                    }
                    f.sent = Instant::now();
                    let event = if changed {
                        f.last_html = html.clone();
                        Event::default().event("snapshot").data(html)
                    } else {
                        Event::default()
                            .event("heartbeat")
                            .data(data.generated_ms.to_string())
                    };
                    return Some((Ok(event), f));
                }
                Err(_) => {
                    f.sent = Instant::now();
                    return Some((
                        Ok(Event::default()
                            .event("trouble")
                            .data("the database cannot be read")),
                        f,
                    ));
                }
            }
        }
    });
    Ok(Sse::new(stream).keep_alive(KeepAlive::default()))
}

/// `POST /live/login` form.
#[derive(Debug, serde::Deserialize)]
pub struct LoginForm {
    token: String,
    #[serde(default)]
    lang: Option<String>,
    #[serde(default)]
    form_token: Option<String>,
}

/// How long a monitor session lasts.
pub const SESSION_TTL: Duration = Duration::from_secs(12 * 3600);

/// `POST /live/login`: checks the token and opens a session, whose random
/// id (never the token) goes into an HttpOnly cookie; a refused token goes
/// back to the form with the reason. Failures are counted per client
/// address: past the limit the answer is 429 with `Retry-After`.
pub async fn login(
    State(state): State<LiveState>,
    headers: HeaderMap,
    ext: axum::http::Extensions,
    Form(form): Form<LoginForm>,
) -> Response {
    let lang = form
        .lang
        .as_deref()
        .and_then(Locale::from_tag)
        .unwrap_or_default();
    if !super::guard::same_origin(&headers)
        || !super::guard::form_token_ok(&headers, form.form_token.as_deref())
    {
        return super::guard::cross_site("login").into_response();
    }
    let client = super::conn::client_addr(&ext);
    if let Some(wait) = state.login_failures.blocked(client) {
        return super::guard::too_many(
            "too many refused sign-ins from this address; wait before trying again",
            wait,
        )
        .into_response();
    }
    let token = form.token.trim();
    let owner = if token.is_empty() {
        None
    } else if let Some(a) = state.access.admin.as_ref().filter(|a| a.matches(token)) {
        Some(idem_store::SessionOwner::Admin {
            token_digest: a.digest_hex(),
        })
    } else {
        match state.api.store.authenticate(token).await {
            Ok(tenant) => Some(idem_store::SessionOwner::Tenant {
                tenant,
                token_hash: idem_store::token_hash(token),
            }),
            Err(idem_store::Error::NotFound | idem_store::Error::TenantDisabled(_)) => None,
            Err(e) => return ApiError::from(e).into_response(),
        }
    };
    let Some(owner) = owner else {
        state.login_failures.count(client);
        return Redirect::to(&format!("/live?lang={}&login=failed", lang.tag())).into_response();
    };
    let id = match state.api.store.open_live_session(&owner, SESSION_TTL).await {
        Ok(id) => id,
        Err(e) => return ApiError::from(e).into_response(),
    };
    let mut res = Redirect::to(&format!("/live?lang={}", lang.tag())).into_response();
    // HttpOnly keeps scripts from reading the id, SameSite=Strict keeps
    // other sites from sending it, Secure keeps it off plain http where the
    // visitor came over https.
    let cookie = axum_extra::extract::cookie::Cookie::build((COOKIE, id.expose().to_owned()))
        .path("/")
        .http_only(true)
        .secure(state.access.cookie_secure || super::guard::came_over_https(&headers))
        .same_site(axum_extra::extract::cookie::SameSite::Strict)
        .max_age(time::Duration::seconds(SESSION_TTL.as_secs() as i64))
        .build();
    if let Ok(v) = HeaderValue::from_str(&cookie.to_string()) {
        res.headers_mut().insert(header::SET_COOKIE, v);
    }
    res
}

/// `POST /live/logout` form.
#[derive(Debug, serde::Deserialize)]
pub struct LogoutForm {
    #[serde(default)]
    csrf: Option<String>,
    #[serde(default)]
    lang: Option<String>,
}

/// `POST /live/logout`: ends the session in the database (a copied cookie
/// stops working too) and clears the cookie.
pub async fn logout(
    State(state): State<LiveState>,
    headers: HeaderMap,
    Form(form): Form<LogoutForm>,
) -> Response {
    if !super::guard::same_origin(&headers) || !csrf_ok(&headers, form.csrf.as_deref()) {
        return super::guard::cross_site("logout").into_response();
    }
    if let Some(id) = super::extract::cookie(&headers, COOKIE) {
        if let Err(e) = state.api.store.end_live_session(&id).await {
            return ApiError::from(e).into_response();
        }
    }
    let lang = form
        .lang
        .as_deref()
        .and_then(Locale::from_tag)
        .unwrap_or_default();
    let mut res = Redirect::to(&format!("/live?lang={}", lang.tag())).into_response();
    let gone = axum_extra::extract::cookie::Cookie::build((COOKIE, ""))
        .path("/")
        .http_only(true)
        .same_site(axum_extra::extract::cookie::SameSite::Strict)
        .max_age(time::Duration::ZERO)
        .build();
    if let Ok(v) = HeaderValue::from_str(&gone.to_string()) {
        res.headers_mut().insert(header::SET_COOKIE, v);
    }
    res
}

/// Middleware on the pages that show live numbers (`/live`, and the panel
/// on `/`): reads them before the page renders and hands the markup to the
/// render through the request's extensions.
pub async fn live_markup(
    State(state): State<LiveState>,
    mut req: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let path = req.uri().path().to_owned();
    if let Some(raw) = path.strip_prefix("/live/actions/") {
        let pairs: Vec<(String, String)> = Query::<Vec<(String, String)>>::try_from_uri(req.uri())
            .map(|q| q.0)
            .unwrap_or_default();
        let l = super::extract::request_locale_of(req.uri(), req.headers());
        let form_token = req
            .extensions()
            .get::<app::FormToken>()
            .map(|t| t.0.clone())
            .unwrap_or_default();
        let (status, html) = action::page(&state, req.headers(), raw, &pairs, &form_token, l).await;
        req.extensions_mut().insert(LiveMarkup { html });
        let mut res = next.run(req).await;
        if status != StatusCode::OK && res.status() == StatusCode::OK {
            *res.status_mut() = status;
        }
        return res;
    }
    let page = path == "/live";
    if !page && path != "/" {
        return next.run(req).await;
    }
    let pairs: Vec<(String, String)> = Query::<Vec<(String, String)>>::try_from_uri(req.uri())
        .map(|q| q.0)
        .unwrap_or_default();
    let locale = super::extract::request_locale_of(req.uri(), req.headers());
    // The calculator ignores what it does not know; the monitor says what
    // is wrong with its address (422) instead of showing another window.
    let (q, refused) = match LiveQuery::parse(&pairs, locale) {
        Ok(q) => (q, None),
        Err(why) => (
            LiveQuery {
                locale,
                ..LiveQuery::default()
            },
            page.then_some(why),
        ),
    };
    let q = if page {
        q
    } else {
        LiveQuery {
            tenant: None,
            window: Window::Day,
            locale,
        }
    };
    let login_failed = pairs.iter().any(|(k, v)| k == "login" && v == "failed");
    let l = q.locale;
    let mut status = StatusCode::OK;
    // (controls, numbers, feed)
    let (controls, numbers, feed) = match viewer(&state, req.headers()).await {
        Ok(Some(_)) if refused.is_some() => {
            status = StatusCode::UNPROCESSABLE_ENTITY;
            (
                String::new(),
                render::refused_html(refused.as_deref().unwrap_or_default(), l),
                String::new(),
            )
        }
        // The calculator's panel reads nothing while the page renders: the
        // calculator is the hot page, and the feed's first event fills the
        // panel a moment after it arrives.
        Ok(Some(_)) if !page => (
            String::new(),
            render::panel_waiting_html(l),
            q.feed("/live/events") + "&view=panel",
        ),
        Ok(Some(v)) => match snapshot(&state, &v, &q).await {
            Ok(data) => (
                render::controls_html(&data, l),
                markup(&data, false, l),
                q.feed("/live/events"),
            ),
            Err(e) => {
                if page {
                    status = e.status();
                }
                let why = match e.status() {
                    StatusCode::FORBIDDEN => app::i18n::tr(
                        l,
                        "Este token vê só o próprio tenant.",
                        "This token sees only its own tenant.",
                    ),
                    _ => app::i18n::tr(
                        l,
                        "Não foi possível ler os números agora; tente de novo em instantes.",
                        "The numbers cannot be read right now; try again in a moment.",
                    ),
                };
                (
                    String::new(),
                    format!("<p class=\"field-error\" role=\"alert\">{why}</p>"),
                    String::new(),
                )
            }
        },
        Ok(None) => {
            if page {
                status = StatusCode::UNAUTHORIZED;
            }
            let numbers = if page {
                render::login_html(
                    l,
                    login_failed,
                    &req.extensions()
                        .get::<app::FormToken>()
                        .map(|t| t.0.clone())
                        .unwrap_or_default(),
                )
            } else {
                render::locked_html(l)
            };
            (String::new(), numbers, String::new())
        }
        Err(_) => (String::new(), render::locked_html(l), String::new()),
    };
    // A signed-in visitor can end the session here.
    let controls = match csrf_token(req.headers()) {
        Some(csrf) if page && !feed.is_empty() => controls + &render::logout_html(&csrf, l),
        _ => controls,
    };
    let html = if page {
        render::page_html(&controls, &numbers, &feed, l)
    } else {
        render::panel_frame_html(&numbers, &feed, l)
    };
    let m = LiveMarkup { html };
    req.extensions_mut().insert(m);
    let mut res = next.run(req).await;
    if status != StatusCode::OK && res.status() == StatusCode::OK {
        *res.status_mut() = status;
    }
    res
}
