//! The gateway: an MCP server for one agent in front of an upstream MCP
//! server. Guarded tools run through [`crate::guarded`]; every other tool,
//! resource and prompt passes through untouched and unrecorded.

use crate::bind::BoundGuard;
use crate::guard_file::{GuardFile, Upstream};
use crate::guarded::{CallUpstream, ClientGone, GuardedCalls, Unanswered};
use crate::tenant::TenantSource;
use idem_store::Store;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, GetPromptRequestParams,
    GetPromptResponse, Implementation, ListPromptsResult, ListResourceTemplatesResult,
    ListResourcesResult, ListToolsResult, MetaObject, PaginatedRequestParams,
    ReadResourceRequestParams, ReadResourceResponse, RequestMetaObject, ServerCapabilities,
    ServerConfig,
};
use rmcp::service::{Peer, RequestContext, RoleClient, RoleServer, RunningService};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::{ErrorData as McpError, ServerHandler, ServiceExt};
use serde_json::{Map, Value};
use std::sync::Arc;
use tracing::Instrument as _;

/// The sentence a guarded tool's description gains.
pub const GUARDED_SENTENCE: &str = "Guarded by idem: repeated calls for the same reference run once; a repeat returns the first result.";

/// Why the gateway cannot start (the command exits 2 with it).
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// The upstream could not be started or did not complete the handshake.
    #[error("the upstream MCP server failed to start: {0}")]
    Upstream(String),
    /// The file does not fit the upstream's tools.
    #[error(transparent)]
    Bind(#[from] crate::bind::BindError),
    /// The upstream did not complete `initialize` in time.
    #[error("the upstream MCP server {upstream} did not answer initialize within {seconds} s")]
    Silent {
        /// The upstream, as the guard file names it (no credentials).
        upstream: String,
        /// The bound.
        seconds: u64,
    },
    /// A header of `[upstream] headers` that HTTP cannot carry.
    #[error("[upstream] headers: {0}")]
    Header(String),
    /// No upstream named anywhere.
    #[error(
        "no upstream: give [upstream] in the guard file, --upstream-command or --upstream-url"
    )]
    NoUpstream,
}

pub use crate::stdio::{serve_stdio, MAX_STDIO_LINE};

/// The upstream's client side, owned by the gateway.
pub struct Connected {
    service: RunningService<RoleClient, ()>,
}

/// How long the upstream has to answer `initialize` before the gateway
/// gives up on starting (exit 2 naming it) rather than hanging silently.
pub const INITIALIZE_WITHIN: std::time::Duration = std::time::Duration::from_secs(10);

/// The upstream as messages name it: the command's program, or the URL
/// without its password.
pub fn shown(upstream: &Upstream) -> String {
    match upstream {
        Upstream::Command(argv) => argv.first().cloned().unwrap_or_default(),
        Upstream::Url { url, .. } => redacted(url),
    }
}

/// `url` with any password replaced, for messages and logs.
pub fn redacted(url: &str) -> String {
    match url.split_once("://") {
        Some((scheme, rest)) => {
            let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
            match authority.rsplit_once('@') {
                Some((userinfo, host)) => {
                    let user = userinfo.split(':').next().unwrap_or("");
                    format!("{scheme}://{user}:***@{host}{path}")
                }
                None => url.to_owned(),
            }
        }
        None => url.to_owned(),
    }
}

impl Connected {
    /// Starts the upstream (a child process over stdio) and completes the
    /// MCP handshake within [`INITIALIZE_WITHIN`].
    pub fn start<'a>(
        upstream: &'a Upstream,
        file: &'a GuardFile,
    ) -> futures_util::future::BoxFuture<'a, Result<Self, StartError>> {
        Box::pin(Self::start_here(upstream, file))
    }

    async fn start_here(upstream: &Upstream, file: &GuardFile) -> Result<Self, StartError> {
        match tokio::time::timeout(INITIALIZE_WITHIN, Self::connect(upstream, file)).await {
            Ok(r) => r,
            Err(_) => Err(StartError::Silent {
                upstream: shown(upstream),
                seconds: INITIALIZE_WITHIN.as_secs(),
            }),
        }
    }

    async fn connect(upstream: &Upstream, file: &GuardFile) -> Result<Self, StartError> {
        let service = match upstream {
            Upstream::Command(argv) => {
                let Some((program, args)) = argv.split_first() else {
                    return Err(StartError::Upstream("the command is empty".into()));
                };
                let mut cmd = tokio::process::Command::new(program);
                cmd.args(args);
                // A clean environment: idem's own (the admin token, the
                // HMAC secret, the database URL) is not the upstream's.
                cmd.env_clear();
                for name in crate::guard_file::UPSTREAM_INHERITS {
                    if let Some(v) = std::env::var_os(name) {
                        cmd.env(name, v);
                    }
                }
                cmd.envs(&file.upstream_env);
                let defaulted = as_user(&mut cmd, program, file.upstream_user.as_deref())?;
                let hint = |e: &dyn std::fmt::Display| {
                    match &defaulted {
                    Some(who) => StartError::Upstream(format!(
                        "{program}: {e} (it ran as `{who}`: idem runs as root, and runs a command upstream as `{who}` unless [upstream] user, --upstream-user or IDEM_UPSTREAM_USER names the account it may run as)"
                    )),
                    None => StartError::Upstream(format!("{program}: {e}")),
                }
                };
                let transport =
                    rmcp::transport::TokioChildProcess::new(cmd).map_err(|e| hint(&e))?;
                ().serve(transport).await.map_err(|e| hint(&e))?
            }
            Upstream::Url { url, headers } => {
                // Already installed by another client in this process: fine.
                let _ = rustls::crypto::ring::default_provider().install_default();
                let mut client = reqwest_upstream::Client::builder()
                    .pool_max_idle_per_host(0)
                    // A redirect would replay the bearer token elsewhere.
                    .redirect(reqwest_upstream::redirect::Policy::none());
                if !file.proxy_from_env {
                    client = client.no_proxy();
                }
                let client = client
                    .build()
                    .map_err(|e| StartError::Upstream(format!("{}: {e}", redacted(url))))?;
                let transport =
                    StreamableHttpClientTransport::with_client(client, http_config(url, headers)?);
                ().serve(transport)
                    .await
                    .map_err(|e| StartError::Upstream(format!("{}: {e}", redacted(url))))?
            }
        };
        Ok(Self { service })
    }

    fn peer(&self) -> &Peer<RoleClient> {
        self.service.peer()
    }
}

/// The account a command upstream runs as when idem runs as root and no
/// account is named: never root's privileges by default.
pub const ROOT_UPSTREAM_DEFAULT: &str = "nobody";

/// Runs the upstream as `user` (its uid, gid and home; std drops the
/// supplementary groups when idem is root). With no user named, a root
/// idem runs it as [`ROOT_UPSTREAM_DEFAULT`], and says which (the account
/// defaulted to, for the start's error); any other idem runs it as itself.
fn as_user(
    cmd: &mut tokio::process::Command,
    program: &str,
    user: Option<&str>,
) -> Result<Option<String>, StartError> {
    let root = nix::unistd::geteuid().is_root();
    let (name, defaulted) = match user {
        Some(n) => (n, false),
        None if root => (ROOT_UPSTREAM_DEFAULT, true),
        None => return Ok(None),
    };
    let found = nix::unistd::User::from_name(name)
        .map_err(|e| StartError::Upstream(format!("[upstream] user {name:?}: {e}")))?;
    let Some(u) = found else {
        return Err(StartError::Upstream(format!(
            "[upstream] user {name:?}: no such user on this machine{}",
            if defaulted {
                " (idem runs as root, and runs a command upstream as this account unless [upstream] user, --upstream-user or IDEM_UPSTREAM_USER names another)"
            } else {
                ""
            }
        )));
    };
    if u.uid.is_root() {
        tracing::warn!(
            upstream = program,
            "the upstream runs as root, as named: it can read idem's data directory (hmac.key, idem.db)"
        );
    }
    cmd.uid(u.uid.as_raw()).gid(u.gid.as_raw());
    cmd.env("HOME", &u.dir);
    Ok(defaulted.then(|| name.to_owned()))
}

/// Keeps this process's memory and `/proc/<pid>/environ` (the admin token,
/// the HMAC secret) from processes of the same user, an upstream
/// included: not dumpable, as ssh-agent does. A child gets its own flag
/// back at exec.
pub fn keep_from_peers() {
    if let Err(e) = nix::sys::prctl::set_dumpable(false) {
        tracing::warn!(error = %e, "could not make idem's process undumpable");
    }
}

/// The Streamable HTTP client's settings for `url`: `authorization` is
/// sent as the bearer token, every other header as given.
fn http_config(
    url: &str,
    headers: &std::collections::BTreeMap<String, String>,
) -> Result<StreamableHttpClientTransportConfig, StartError> {
    let mut config = StreamableHttpClientTransportConfig::with_uri(url.to_owned());
    let mut custom = std::collections::HashMap::new();
    for (name, value) in headers {
        if name.eq_ignore_ascii_case("authorization") {
            let token = value.strip_prefix("Bearer ").unwrap_or(value);
            config = config.auth_header(token.to_owned());
            continue;
        }
        let n = http::HeaderName::try_from(name.as_str())
            .map_err(|_| StartError::Header(format!("{name:?} is not a header name")))?;
        let v = http::HeaderValue::try_from(value.as_str()).map_err(|_| {
            StartError::Header(format!("the value of {name} is not a header value"))
        })?;
        custom.insert(n, v);
    }
    Ok(config.custom_headers(custom))
}

impl CallUpstream for Peer<RoleClient> {
    async fn call(
        &self,
        tool: &str,
        arguments: Map<String, Value>,
        meta: Map<String, Value>,
    ) -> Result<CallToolResult, Unanswered> {
        let span = upstream_span(tool);
        let meta = traced(&span, meta);
        let mut params = CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments);
        if !meta.is_empty() {
            params.meta = Some(RequestMetaObject(MetaObject(meta)));
        }
        let answered = self.call_tool(params).instrument(span.clone()).await;
        mark_upstream(
            &span,
            answered.as_ref().ok().map(|r| r.is_error == Some(true)),
        );
        answered.map_err(|e| {
            if never_left(&e) {
                Unanswered::NotSent(format!(
                    "the upstream MCP server refused the connection ({e})"
                ))
            } else {
                Unanswered::Lost(e.to_string())
            }
        })
    }

    fn available(&self) -> bool {
        !self.is_transport_closed()
    }
}

/// Whether a failed call provably never reached the upstream: the HTTP
/// client could not connect (refused, no route, name or TLS failure), so
/// no byte of the request was written. Anything else (a reset after the
/// request left, a closed stream, a time-out) may have run.
fn never_left(e: &rmcp::ServiceError) -> bool {
    use rmcp::transport::streamable_http_client::StreamableHttpError;
    let rmcp::ServiceError::TransportSend(sent) = e else {
        return false;
    };
    let mut at: Option<&(dyn std::error::Error + 'static)> = Some(sent.error.as_ref());
    while let Some(err) = at {
        if let Some(StreamableHttpError::Client(c)) =
            err.downcast_ref::<StreamableHttpError<reqwest_upstream::Error>>()
        {
            return c.is_connect();
        }
        if let Some(c) = err.downcast_ref::<reqwest_upstream::Error>() {
            return c.is_connect();
        }
        if let Some(io) = err.downcast_ref::<std::io::Error>() {
            return io.kind() == std::io::ErrorKind::ConnectionRefused;
        }
        at = err.source();
    }
    false
}

/// What of a request's `_meta` goes on to the upstream: every entry but
/// those that belong to the agent's own session with the gateway (its
/// progress token, the protocol's `io.modelcontextprotocol/…` keys), which
/// the gateway's session with the upstream has its own of.
fn forwarded_meta(meta: &RequestMetaObject) -> Map<String, Value> {
    meta.0
         .0
        .iter()
        .filter(|(k, _)| {
            k.as_str() != "progressToken" && !k.starts_with("io.modelcontextprotocol/")
        })
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// The span of one `tools/call` (traces on), as OpenTelemetry's MCP
/// conventions name it: `server` for a call the gateway answers, `client`
/// for its own call to the upstream (a child of the former).
fn mcp_span(tool: &str, kind: &'static str) -> tracing::Span {
    tracing::info_span!(
        target: idem_wire::trace::TARGET,
        "mcp",
        otel.name = %format_args!("tools/call {tool}"),
        otel.kind = kind,
        otel.status_code = tracing::field::Empty,
        mcp.method.name = "tools/call",
        gen_ai.operation.name = "execute_tool",
        gen_ai.tool.name = %tool,
        error.type = tracing::field::Empty,
    )
}

/// The span of one call to the upstream.
fn upstream_span(tool: &str) -> tracing::Span {
    mcp_span(tool, "client")
}

/// The span of one `tools/call` the gateway answers: a child of the
/// `traceparent` in the request's `_meta`, when it carries one.
fn call_span(tool: &str, meta: &RequestMetaObject) -> tracing::Span {
    let span = mcp_span(tool, "server");
    idem_wire::trace::continue_from(&span, |name| meta.0 .0.get(name).and_then(Value::as_str));
    span
}

/// The upstream's answer on its span: `tool_error` when it answered with
/// `isError` (`Some(true)`), `no_answer` and an error status when none came
/// (`None`).
fn mark_upstream(span: &tracing::Span, tool_error: Option<bool>) {
    match tool_error {
        Some(true) => {
            span.record("error.type", "tool_error");
        }
        Some(false) => {}
        None => {
            span.record("error.type", "no_answer")
                .record("otel.status_code", "error");
        }
    }
}

/// `meta` as the upstream gets it: with `span`'s trace context in place of
/// the caller's when traces are exported (the upstream's spans then hang
/// under the gateway's), unchanged otherwise.
fn traced(span: &tracing::Span, mut meta: Map<String, Value>) -> Map<String, Value> {
    let ours = idem_wire::trace::entries_of(span);
    if !ours.is_empty() {
        meta.remove("tracestate");
        for (name, value) in ours {
            meta.insert(name.to_owned(), Value::String(value));
        }
    }
    meta
}

/// What a guarded call came to, on its span (traces on): the same facts
/// `_meta.idem` tells the agent.
fn note_answer(answer: &crate::guarded::Answer) {
    use crate::guarded::CallOutcome;
    use idem_wire::trace::note;
    note("idem.outcome", answer.outcome.as_str());
    note("idem.replayed", answer.outcome == CallOutcome::Replayed);
    note("idem.uncertain", answer.outcome == CallOutcome::Uncertain);
    note("idem.diverged", answer.diverged);
    if let Some(idem) = answer.result.meta.as_ref().and_then(|m| m.0.get("idem")) {
        if let Some(a) = idem.get("attempt").and_then(Value::as_i64) {
            note("idem.attempt", a);
        }
    }
}

/// The gateway's MCP server.
#[derive(Clone)]
pub struct Gateway {
    inner: Arc<Inner>,
}

struct Inner {
    file: GuardFile,
    /// The file's guards, bound to the upstream's tools at start.
    guards: Vec<BoundGuard>,
    store: Store,
    tenant: TenantSource,
    /// The upstream now: replaced by [`supervise`] when it is gone.
    upstream: std::sync::RwLock<Arc<Connected>>,
    /// How it is reached, to start it again.
    target: Upstream,
    /// Whether unguarded tools, resources and prompts pass through.
    pass_through: bool,
    /// The guarded tools whose unrecorded (handshake) call was answered
    /// with success: each refuses every unrecorded call from then on.
    tripped: std::sync::Mutex<std::collections::BTreeSet<String>>,
    /// The largest result stored for replay (`--max-outcome-bytes`).
    max_outcome: usize,
    /// Where a mount's guarded calls are timed for `/metrics`, under its
    /// name (a stdio gateway has no `/metrics`).
    times: std::sync::OnceLock<(String, crate::timing::GatewayTimes)>,
}

/// How long the supervisor waits before its first restart of a gone
/// upstream; each failed attempt doubles it, up to [`RESTART_MAX`].
const RESTART_FIRST: std::time::Duration = std::time::Duration::from_millis(250);
/// The longest wait between two restarts of an upstream that keeps failing.
const RESTART_MAX: std::time::Duration = std::time::Duration::from_secs(30);

/// Watches the upstream and starts it again, with backoff, when it is gone
/// (its process exited, its connection closed), until the gateway is
/// dropped. Calls meanwhile are answered "not sent".
async fn supervise(inner: std::sync::Weak<Inner>) {
    let mut wait = RESTART_FIRST;
    loop {
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        let Some(me) = inner.upgrade() else { return };
        if me.current().peer().available() {
            wait = RESTART_FIRST;
            continue;
        }
        tracing::warn!(upstream = %shown(&me.target), "the upstream MCP server is gone; starting it again in {wait:?}");
        tokio::time::sleep(wait).await;
        match Connected::start(&me.target, &me.file).await {
            Ok(c) => {
                *me.upstream.write().unwrap_or_else(|p| p.into_inner()) = Arc::new(c);
                tracing::info!(upstream = %shown(&me.target), "the upstream MCP server was started again");
                wait = RESTART_FIRST;
            }
            Err(e) => {
                tracing::error!(error = %e, "starting the upstream MCP server again failed");
                wait = (wait * 2).min(RESTART_MAX);
            }
        }
    }
}

impl Inner {
    /// The bound guard of `tool`, if it is guarded.
    fn guard(&self, tool: &str) -> Option<&BoundGuard> {
        self.guards.iter().find(|g| g.tool == tool)
    }

    fn current(&self) -> Arc<Connected> {
        self.upstream
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
}

impl Gateway {
    /// Connects the upstream, checks that every guarded tool exists there,
    /// and returns the gateway ready to serve.
    pub fn start(
        store: Store,
        tenant: TenantSource,
        file: GuardFile,
        upstream: Option<Upstream>,
        max_outcome: usize,
    ) -> futures_util::future::BoxFuture<'static, Result<Self, StartError>> {
        Box::pin(Self::start_here(store, tenant, file, upstream, max_outcome))
    }

    async fn start_here(
        store: Store,
        tenant: TenantSource,
        file: GuardFile,
        upstream: Option<Upstream>,
        max_outcome: usize,
    ) -> Result<Self, StartError> {
        let target = upstream
            .or_else(|| file.upstream.clone())
            .ok_or(StartError::NoUpstream)?;
        keep_from_peers();
        let connected = Connected::start(&target, &file).await?;
        let guards = bind(&file, &connected).await?;
        // A mount is shared by the tenants it names, with one upstream and
        // its credentials: what is not guarded (a refund, a list of
        // charges) passes only when the file says so. A stdio gateway is
        // one tenant's, and passes by default.
        let pass_through = file
            .pass_through
            .unwrap_or(matches!(tenant, TenantSource::Fixed(_)));
        let inner = Arc::new(Inner {
            file,
            guards,
            store,
            tenant,
            upstream: std::sync::RwLock::new(Arc::new(connected)),
            target,
            pass_through,
            tripped: std::sync::Mutex::default(),
            max_outcome,
            times: std::sync::OnceLock::new(),
        });
        tokio::spawn(supervise(Arc::downgrade(&inner)));
        Ok(Self { inner })
    }

    /// Serves one agent over stdin and stdout until it closes them.
    pub fn serve_stdio(
        self,
    ) -> futures_util::future::BoxFuture<'static, Result<(), std::io::Error>> {
        let me = self.clone();
        Box::pin(serve_stdio(self, move |tool| {
            me.inner.file.guard(tool).is_some()
        }))
    }

    /// Times this mount's guarded calls into `times`, under `name`: the
    /// gateway's own time and its upstream's (once; a second call is
    /// ignored).
    pub fn time_with(&self, name: &str, times: crate::timing::GatewayTimes) {
        let _ = self.inner.times.set((name.to_owned(), times));
    }

    /// Whether `tool` is one of this gateway's guarded tools.
    pub fn guards(&self, tool: &str) -> bool {
        self.inner.guard(tool).is_some()
    }

    fn upstream(&self) -> Peer<RoleClient> {
        self.inner.current().peer().clone()
    }

    /// Whether the upstream answers now (`false` while the supervisor
    /// starts it again): what a mount's readiness reports.
    pub fn upstream_up(&self) -> bool {
        self.inner.current().peer().available()
    }

    /// The tenants a mount answers (`None`: any, as over stdio).
    pub fn tenants(&self) -> Option<&[idem_core::TenantId]> {
        self.inner.file.tenants.as_deref()
    }

    /// Refused unless unguarded traffic passes through.
    fn passing(&self, what: &str) -> Result<(), McpError> {
        if self.inner.pass_through {
            Ok(())
        } else {
            Err(McpError::invalid_params(
                format!("{what} is not offered here: this gateway passes only its guarded tools (pass_through = false)"),
                None,
            ))
        }
    }

    /// Answers one `tools/call`: a guarded tool's through its guard, any
    /// other forwarded as it came.
    async fn answer_call(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let meta = forwarded_meta(&context.meta);
        let Some(guard) = self.inner.guard(&request.name) else {
            self.passing(&format!("tool {:?}", request.name))?;
            if let Some(tenant) = self.inner.tenant.of(&context) {
                self.inner
                    .tenant
                    .refuse_disabled(&self.inner.store, &tenant)
                    .await?;
            }
            return self.forward(request, meta).await.map_err(forwarded);
        };
        let Some(tenant) = self.inner.tenant.of(&context) else {
            return Err(McpError::invalid_request(
                "no tenant: authenticate with a tenant's bearer token",
                None,
            ));
        };
        self.inner
            .tenant
            .refuse_disabled(&self.inner.store, &tenant)
            .await?;
        if guard.handshake(&meta) {
            return self.handshake(guard, &tenant, request, meta).await;
        }
        let started = std::time::Instant::now();
        let gate = GuardedCalls::new(self.inner.store.clone(), tenant)
            .with_max_outcome(self.inner.max_outcome);
        let arguments = request.arguments.unwrap_or_default();
        // Gone: over stdio, rmcp cancels the request (the agent sent
        // notifications/cancelled, or closed the session); over HTTP, the
        // server's layer says the client left.
        let gone = context.ct.child_token();
        if let Some(ClientGone(http)) = context
            .extensions
            .get::<http::request::Parts>()
            .and_then(|p| p.extensions.get::<ClientGone>())
        {
            let (http, gone) = (http.clone(), gone.clone());
            tokio::spawn(async move {
                tokio::select! {
                    () = http.cancelled() => gone.cancel(),
                    () = gone.cancelled() => {}
                }
            });
        }
        let answer = gate
            .call_until(guard, arguments, meta, &self.upstream(), &gone)
            .await;
        // Ends the linking task above.
        gone.cancel();
        if let Some((name, times)) = self.inner.times.get() {
            times.observe(name, &guard.tool, started.elapsed(), gate.upstream_time());
        }
        tracing::info!(tool = %guard.tool, outcome = ?answer.outcome, diverged = answer.diverged, "guarded call");
        note_answer(&answer);
        Ok(answer.result.into())
    }

    /// Sends `request` on unrecorded, with `meta` (and the trace context
    /// of its own span when traces are exported).
    async fn forward(
        &self,
        mut request: CallToolRequestParams,
        meta: Map<String, Value>,
    ) -> Result<CallToolResponse, rmcp::ServiceError> {
        let span = upstream_span(&request.name);
        let meta = traced(&span, meta);
        request.meta = (!meta.is_empty()).then_some(RequestMetaObject(MetaObject(meta)));
        let answered = self
            .upstream()
            .call_tool_once(request)
            .instrument(span.clone())
            .await;
        mark_upstream(
            &span,
            answered
                .as_ref()
                .ok()
                .map(|r| matches!(r, CallToolResponse::Complete(c) if c.is_error == Some(true))),
        );
        answered
    }

    /// A call of a guarded tool that carries none of the `_meta` entries
    /// its key reads (x402's unpaid first call): nothing in it can pay, so
    /// it is forwarded unrecorded and the agent learns what the action
    /// needs. Its answer must be what such a call gets (an error, a payment
    /// required): one answered with success shows the guard does not see
    /// how this tool's calls pay (a misread pointer, a payment sent where
    /// the guard does not read). That is an alarm, and from then on the
    /// guard refuses every call it cannot record, never passing another
    /// payment unrecorded.
    async fn handshake(
        &self,
        guard: &BoundGuard,
        tenant: &idem_core::TenantId,
        request: CallToolRequestParams,
        meta: Map<String, Value>,
    ) -> Result<CallToolResponse, McpError> {
        let lacked = guard.meta_entries().join(", ");
        let fields_line = guard.meta_field_line();
        if self.tripped(&guard.tool) {
            self.count(
                tenant,
                &guard.tool,
                idem_store::CallCount::UnrecordedRefused,
            )
            .await;
            return Ok(crate::guarded::refused_unrecorded(format!(
                "idem refuses this call of {tool}: it carries none of the _meta entries its key reads ({lacked}), so it could not be recorded, \
                 and an earlier such call was answered with success: the guard ({path}:{fields_line}) does not see how this tool's calls pay. \
                 Nothing was sent. The gateway's operator must fix [guard.fields] in {path} (line {fields_line}) and restart it; \
                 `idem mcp gateway --check` shows what a call is keyed on.",
                tool = guard.tool,
                path = self.inner.file.path,
            )));
        }
        tracing::info!(tool = %guard.tool, "handshake call, forwarded unrecorded");
        let response = self.forward(request, meta).await.map_err(forwarded)?;
        let acted = match &response {
            CallToolResponse::Complete(r) => r.is_error != Some(true),
            // Asking the agent for more is no execution yet.
            CallToolResponse::InputRequired(_) => false,
            // A task started, or anything newer: it acted.
            _ => true,
        };
        self.count(tenant, &guard.tool, idem_store::CallCount::Unrecorded)
            .await;
        if acted {
            tracing::error!(
                tool = %guard.tool,
                guard_file = %self.inner.file.path,
                line = fields_line,
                "a call of a guarded tool carrying none of the _meta entries its key reads ({lacked}) was forwarded unrecorded and answered with SUCCESS: \
                 the guard does not see how this tool's calls pay (a misread meta: pointer, or a payment sent where the guard does not read). \
                 Every unrecorded call of this tool is refused from now on; fix [guard.fields] and restart"
            );
            self.count(
                tenant,
                &guard.tool,
                idem_store::CallCount::UnrecordedSuccess,
            )
            .await;
            self.inner
                .tripped
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .insert(guard.tool.clone());
        }
        Ok(crate::guarded::unrecorded(response))
    }

    /// Whether `tool`'s guard has seen an unrecorded call succeed.
    fn tripped(&self, tool: &str) -> bool {
        self.inner
            .tripped
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .contains(tool)
    }

    /// Counts a call for the monitor; a count that cannot be written costs
    /// the agent nothing.
    async fn count(
        &self,
        tenant: &idem_core::TenantId,
        tool: &str,
        outcome: idem_store::CallCount,
    ) {
        let counted = match self.inner.store.session().await {
            Ok(mut s) => s.count_mcp_call(tenant, tool, outcome, false).await,
            Err(e) => Err(e),
        };
        if let Err(e) = counted {
            tracing::warn!(error = %e, tool, "a call was not counted");
        }
    }

    fn upstream_capabilities(&self) -> Option<ServerCapabilities> {
        self.upstream().peer_info().map(|i| i.capabilities.clone())
    }
}

/// Lists the upstream's tools and binds `file` to them
/// ([`GuardFile::bind`]): the guards as they run, each with its tool's
/// `outputSchema`.
pub fn bind<'a>(
    file: &'a GuardFile,
    connected: &'a Connected,
) -> futures_util::future::BoxFuture<'a, Result<Vec<BoundGuard>, StartError>> {
    Box::pin(async move {
        let tools = connected
            .peer()
            .list_all_tools()
            .await
            .map_err(|e| StartError::Upstream(format!("tools/list: {e}")))?;
        Ok(file.bind(&tools)?)
    })
}

/// What `idem mcp gateway --check` says of one sample call: the fields its
/// key would cover (idem's field, where it is read, the value read, the
/// value normalized), or why it would be forwarded unrecorded or refused.
pub fn explain(
    file: &GuardFile,
    catalog: &idem_core::Catalog,
    tool: &str,
    arguments: &Map<String, Value>,
    meta: &Map<String, Value>,
) -> String {
    use std::fmt::Write as _;
    let Some(guard) = file.guard(tool) else {
        let pass = if file.pass_through == Some(false) {
            "refused (pass_through = false)"
        } else {
            "passed through unguarded and unrecorded"
        };
        return format!("{tool}: not guarded in {}: {pass}\n", file.path);
    };
    let mut out = format!("{tool} (line {}, action {}):\n", guard.line, guard.action);
    if guard.handshake(meta) {
        let _ = writeln!(
            out,
            "  forwarded UNRECORDED: the call carries none of the _meta entries its key reads ({}); its _meta has {}. \
             Only a handshake (an unpaid call answered with an error) may look like this: if the upstream answers it with success, \
             the guard does not see how this tool's calls pay, and the gateway refuses every such call from then on.",
            guard.meta_entries().join(", "),
            if meta.is_empty() {
                "no entries".to_owned()
            } else {
                meta.keys().cloned().collect::<Vec<_>>().join(", ")
            }
        );
        return out;
    }
    let mut fields = Map::new();
    for crate::guard_file::Field {
        name: field,
        arg,
        line,
    } in &guard.fields
    {
        match arg.read(arguments, meta) {
            Some(v) => {
                fields.insert(field.clone(), v.clone());
            }
            None => {
                let what = if arg.in_meta() {
                    "_meta entry"
                } else {
                    "argument"
                };
                let _ = writeln!(
                    out,
                    "  REFUSED, nothing recorded: missing {what} {arg} (idem's field {field}, line {line})"
                );
                return out;
            }
        }
    }
    let text = Value::Object(fields.clone()).to_string();
    let normalized = catalog.action(guard.action.as_str()).ok().and_then(|spec| {
        let payload = idem_core::Payload::from_json(&text).ok()?;
        Some(idem_core::derive::normalize_payload(
            spec,
            spec.rules_version,
            &payload,
        ))
    });
    if let Some(Err(e)) = &normalized {
        let _ = writeln!(out, "  REFUSED, nothing recorded: {e}");
        return out;
    }
    let _ = writeln!(out, "  recorded; the key covers:");
    for crate::guard_file::Field {
        name: field,
        arg,
        line,
    } in &guard.fields
    {
        let norm = match &normalized {
            Some(Ok(n)) => n.get(field).unwrap_or_default().to_owned(),
            _ => String::new(),
        };
        let _ = writeln!(
            out,
            "    {field} = {} (from {arg}, line {line}) -> {norm:?}",
            fields.get(field).map(Value::to_string).unwrap_or_default()
        );
    }
    if let Some(k) = &guard.key_argument {
        let _ = writeln!(
            out,
            "  the key is written into {} (line {})",
            k.value, k.line
        );
    }
    if !guard.freeze_meta.is_empty() {
        let _ = writeln!(
            out,
            "  frozen _meta entries: {}",
            guard.freeze_meta.join(", ")
        );
    }
    out
}

fn forwarded(e: rmcp::ServiceError) -> McpError {
    match e {
        rmcp::ServiceError::McpError(e) => e,
        other => McpError::internal_error(format!("the upstream MCP server: {other}"), None),
    }
}

impl ServerHandler for Gateway {
    fn get_info(&self) -> ServerConfig {
        let up = self.upstream_capabilities().unwrap_or_default();
        let mut caps = ServerCapabilities::builder().enable_tools().build();
        if self.inner.pass_through {
            caps.resources = up.resources;
            caps.prompts = up.prompts;
        }
        ServerConfig::new(caps)
            .with_server_info(Implementation::new("idem-mcp-gateway", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "idem guards this server's money-moving tools: a repeated call for the same reference runs once and returns the first result (see _meta.idem).",
            )
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        let mut listed = self
            .upstream()
            .list_tools(request)
            .await
            .map_err(forwarded)?;
        if !self.inner.pass_through {
            listed.tools.retain(|t| self.inner.guard(&t.name).is_some());
        }
        for tool in &mut listed.tools {
            if self.inner.guard(&tool.name).is_some() {
                let said = tool
                    .description
                    .as_deref()
                    .unwrap_or("")
                    .trim_end()
                    .to_owned();
                let joined = if said.is_empty() {
                    GUARDED_SENTENCE.to_owned()
                } else {
                    format!("{said} {GUARDED_SENTENCE}")
                };
                tool.description = Some(joined.into());
            }
        }
        Ok(listed)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let span = call_span(&request.name, &context.meta);
        let answered = self
            .answer_call(request, context)
            .instrument(span.clone())
            .await;
        match &answered {
            Ok(CallToolResponse::Complete(r)) if r.is_error == Some(true) => {
                span.record("error.type", "tool_error");
            }
            Ok(_) => {}
            Err(e) => {
                span.record("error.type", i64::from(e.code.0))
                    .record("otel.status_code", "error");
            }
        }
        answered
    }

    async fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        if !self.inner.pass_through {
            return Ok(ListResourcesResult::default());
        }
        self.upstream()
            .list_resources(request)
            .await
            .map_err(forwarded)
    }

    async fn list_resource_templates(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, McpError> {
        if !self.inner.pass_through {
            return Ok(ListResourceTemplatesResult::default());
        }
        self.upstream()
            .list_resource_templates(request)
            .await
            .map_err(forwarded)
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        self.passing("this resource")?;
        if let Some(tenant) = self.inner.tenant.of(&context) {
            self.inner
                .tenant
                .refuse_disabled(&self.inner.store, &tenant)
                .await?;
        }
        self.upstream()
            .read_resource(request)
            .await
            .map(Into::into)
            .map_err(forwarded)
    }

    async fn list_prompts(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, McpError> {
        if !self.inner.pass_through {
            return Ok(ListPromptsResult::default());
        }
        self.upstream()
            .list_prompts(request)
            .await
            .map_err(forwarded)
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, McpError> {
        self.passing("this prompt")?;
        if let Some(tenant) = self.inner.tenant.of(&context) {
            self.inner
                .tenant
                .refuse_disabled(&self.inner.store, &tenant)
                .await?;
        }
        self.upstream()
            .get_prompt(request)
            .await
            .map(Into::into)
            .map_err(forwarded)
    }
}
