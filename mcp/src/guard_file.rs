//! The guard file: which upstream MCP server the gateway fronts, and which
//! of its tools move money and so run once per intent.
//!
//! ```toml
//! [upstream]
//! command = ["python3", "pay.py"]
//!
//! [[guard]]
//! tool = "create_pix_charge"
//! action = "pix.cobranca"
//! key_argument = "idempotency_key"
//! lease_ms = 30000
//! on_uncertain = "resend"
//! [guard.fields]
//! cliente_id = "customer_id"
//! valor = "amount"
//! chave_pix_destino = "pix_key"
//! referencia_intencao = "invoice_ref"
//! ```
//!
//! Its shape is a public interface: keys are added, never renamed. A file
//! that names an unknown action, a field the action does not have, or
//! leaves one of the action's fields without an argument is refused with
//! the line it is on, before the gateway serves anything.

use idem_core::{ActionType, Catalog};
use serde::Deserialize;
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::time::Duration;
use toml::Spanned;

/// The largest guard file read (it is configuration, never data).
pub const MAX_BYTES: usize = 64 * 1024;
/// The most tools one file guards.
pub const MAX_GUARDS: usize = 64;
/// The most `_meta` entries one guard freezes.
pub const MAX_FROZEN_META: usize = 16;
/// The default claim lease, as `/v1` begin's.
pub use idem_wire::DEFAULT_LEASE_MS;
/// The longest lease a guard may set (one hour, as `/v1`).
pub use idem_wire::MAX_LEASE_MS;

/// What a command upstream inherits of the gateway's environment; every
/// other variable it gets is named in `[upstream] env`.
pub const UPSTREAM_INHERITS: [&str; 3] = ["PATH", "HOME", "LANG"];

/// A guard file that cannot be used, with the line it is about.
#[derive(Debug, thiserror::Error)]
#[error("{path}:{line}: {message}")]
pub struct GuardFileError {
    /// The file, as given.
    pub path: String,
    /// 1-based line (1 when the problem is the whole file).
    pub line: usize,
    /// What is wrong and what to write instead.
    pub message: String,
}

/// How the gateway reaches the upstream MCP server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Upstream {
    /// A server over stdio the gateway starts and owns: program and arguments.
    Command(Vec<String>),
    /// A server over Streamable HTTP, with headers to send (authorization).
    Url {
        /// Its address.
        url: String,
        /// Headers sent with every request.
        headers: BTreeMap<String, String>,
    },
}

/// What to do with an action whose earlier attempt's outcome is unknown.
#[derive(Debug, Clone)]
pub enum OnUncertain {
    /// Answer `isError`: the outcome is unknown, a person settles it on `/live`.
    Refuse,
    /// Call the upstream again with the same key and the frozen arguments
    /// (for upstreams that honour the key), and record its answer as the
    /// reconciliation.
    Resend,
    /// Ask the upstream with a tool that reads, never acts (`[guard.lookup]`):
    /// executed settles the action with what it says, not executed runs it
    /// again under the same key, anything else refuses as `Refuse` does.
    Lookup(Box<Lookup>),
}

/// `on_uncertain` as the file spells it; `lookup` takes its table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
enum RawOnUncertain {
    Refuse,
    Resend,
    Lookup,
}

/// A value of the file with the line it is written on, for the messages
/// that name it later (at start against the upstream, or at `--check`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lined<T> {
    /// The value.
    pub value: T,
    /// Its 1-based line.
    pub line: usize,
}

/// One `[guard.fields]` entry: the catalog field and where the call holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Field {
    /// The catalog field.
    pub name: String,
    /// The argument (or `meta:` entry) it is read from.
    pub arg: ArgPath,
    /// The line naming the argument.
    pub line: usize,
}

/// How to ask the provider whether an action whose outcome is unknown was
/// executed (`[guard.lookup]`).
#[derive(Debug, Clone)]
pub struct Lookup {
    /// The upstream tool that reads (it must not be guarded).
    pub tool: String,
    /// Its arguments: each a value of the frozen arguments, or the key.
    pub arguments: Vec<(String, LookupArgument)>,
    /// When its result says the action was executed.
    pub executed: Verdict,
    /// When its result says the action was not executed.
    pub not_executed: Verdict,
    /// The part of its result that stands for the guarded tool's (a JSON
    /// Pointer; the whole result when absent).
    pub result: Option<String>,
    /// Where the record a lookup found holds each of these fields of the
    /// action (field, JSON Pointer into its result): an executed record is
    /// settled only when every one derives, in place of the frozen value,
    /// to the same key.
    pub matches: Vec<(String, String)>,
    /// The line of the `[guard.lookup]` table.
    pub line: usize,
}

/// Where a lookup argument's value comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LookupArgument {
    /// The action's derived key (`"$key"`).
    Key,
    /// A value of the frozen arguments.
    Frozen(ArgPath),
}

/// A test on a lookup's result: the value at `pointer` is one of `values`.
#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
    /// A JSON Pointer into the result (`""`: the whole result).
    pub pointer: String,
    /// The values that mean this verdict.
    pub values: Vec<Value>,
}

impl Verdict {
    /// Whether `result` says this.
    pub fn holds(&self, result: &Value) -> bool {
        result
            .pointer(&self.pointer)
            .is_some_and(|v| self.values.contains(v))
    }
}

/// What an upstream `isError` result means for the action.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Errors {
    /// A retryable failure: the next call executes again under the same key.
    Retryable,
    /// Final: stored and replayed like a success.
    Final,
}

/// Where a value is in a tool call's arguments: a plain name is a
/// top-level argument; a JSON Pointer (RFC 6901, starting with `/`) reaches
/// into nested objects and arrays (`/payload/totals/0/amount`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArgPath {
    text: String,
    tokens: Vec<String>,
    /// A `meta:` pointer: into the request's `_meta`, not its arguments.
    in_meta: bool,
}

impl ArgPath {
    /// Reads a `[guard.fields]` value: an argument, or with `meta:` a
    /// JSON Pointer into the request's `_meta`
    /// (`meta:/x402~1payment/payload/authorization/from`).
    pub fn parse_field(text: &str) -> Result<Self, String> {
        let Some(pointer) = text.strip_prefix("meta:") else {
            return Self::parse(text);
        };
        if !pointer.starts_with('/') || pointer.len() < 2 {
            return Err(format!(
                "{text:?}: after `meta:` comes a JSON Pointer into the request's _meta, starting with the entry's name (meta:/x402~1payment/payload/authorization/from)"
            ));
        }
        let mut path = Self::parse(pointer)?;
        path.text = text.to_owned();
        path.in_meta = true;
        Ok(path)
    }

    /// Reads a `key_argument` or a lookup argument: always the arguments.
    pub fn parse(text: &str) -> Result<Self, String> {
        if text.is_empty() {
            return Err("an argument name cannot be empty".into());
        }
        if text.starts_with("meta:") {
            return Err(format!(
                "{text:?}: a `meta:` pointer is read, never written, and only a [guard.fields] value can name one; name an argument (a plain name or a JSON Pointer such as /payload/amount)"
            ));
        }
        let Some(rest) = text.strip_prefix('/') else {
            return Ok(Self {
                text: text.to_owned(),
                tokens: vec![text.to_owned()],
                in_meta: false,
            });
        };
        let mut tokens = Vec::new();
        for raw in rest.split('/') {
            // RFC 6901: `~` is always followed by 0 (`~`) or 1 (`/`).
            let bad = raw
                .match_indices('~')
                .any(|(i, _)| !matches!(raw.as_bytes().get(i + 1), Some(b'0' | b'1')));
            if bad {
                return Err(format!(
                    "{text:?} is not a JSON Pointer: `~` must be written `~0` and `/` inside a name `~1`"
                ));
            }
            tokens.push(raw.replace("~1", "/").replace("~0", "~"));
        }
        Ok(Self {
            text: text.to_owned(),
            tokens,
            in_meta: false,
        })
    }

    /// Whether it points into the request's `_meta` (`meta:`).
    pub fn in_meta(&self) -> bool {
        self.in_meta
    }

    /// The value it names: in `meta` for a `meta:` pointer, else in
    /// `arguments`.
    pub fn read<'a>(
        &self,
        arguments: &'a Map<String, Value>,
        meta: &'a Map<String, Value>,
    ) -> Option<&'a Value> {
        self.get(if self.in_meta { meta } else { arguments })
    }

    /// As written in the guard file.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Whether it is a JSON Pointer rather than a top-level name.
    pub fn is_pointer(&self) -> bool {
        self.text.starts_with('/')
    }

    /// The member names and array indexes, unescaped.
    pub fn tokens(&self) -> &[String] {
        &self.tokens
    }

    /// The value it names in `arguments`, if there is one.
    pub fn get<'a>(&self, arguments: &'a Map<String, Value>) -> Option<&'a Value> {
        let (first, rest) = self.tokens.split_first()?;
        let mut at = arguments.get(first)?;
        for token in rest {
            at = match at {
                Value::Object(m) => m.get(token)?,
                Value::Array(a) => a.get(index(token)?)?,
                _ => return None,
            };
        }
        Some(at)
    }

    /// Writes `value` where it points in `arguments`, creating the objects
    /// on the way that are missing. Refused when something on the way is
    /// neither an object nor an array, or an index is past an array's end.
    pub fn set(&self, arguments: &mut Map<String, Value>, value: Value) -> Result<(), String> {
        let Some((last, parents)) = self.tokens.split_last() else {
            return Err("the pointer names no member".into());
        };
        let Some((first, rest)) = parents.split_first() else {
            arguments.insert(last.clone(), value);
            return Ok(());
        };
        let mut at = arguments
            .entry(first.clone())
            .or_insert_with(|| Value::Object(Map::new()));
        for token in rest {
            at = match at {
                Value::Object(m) => m
                    .entry(token.clone())
                    .or_insert_with(|| Value::Object(Map::new())),
                Value::Array(a) => {
                    let len = a.len();
                    index(token).and_then(|i| a.get_mut(i)).ok_or_else(|| {
                        format!("{}: no element {token} in an array of {len}", self.text)
                    })?
                }
                _ => {
                    return Err(format!(
                        "{}: `{token}` is inside a value that is neither an object nor an array",
                        self.text
                    ))
                }
            };
        }
        match at {
            Value::Object(m) => {
                m.insert(last.clone(), value);
                Ok(())
            }
            Value::Array(a) => {
                let len = a.len();
                let slot = index(last).and_then(|i| a.get_mut(i)).ok_or_else(|| {
                    format!("{}: no element {last} in an array of {len}", self.text)
                })?;
                *slot = value;
                Ok(())
            }
            _ => Err(format!(
                "{}: `{last}` is inside a value that is neither an object nor an array",
                self.text
            )),
        }
    }
}

impl std::fmt::Display for ArgPath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text)
    }
}

/// An array index as RFC 6901 writes one: digits, no leading zero.
pub(crate) fn index(token: &str) -> Option<usize> {
    let plain = !token.is_empty()
        && token.bytes().all(|b| b.is_ascii_digit())
        && (token == "0" || !token.starts_with('0'));
    plain.then(|| token.parse().ok()).flatten()
}

/// One guarded tool.
#[derive(Debug, Clone)]
pub struct Guard {
    /// The upstream tool's name.
    pub tool: String,
    /// The catalog action whose fields make the key.
    pub action: ActionType,
    /// The argument the derived key is written into for the upstream
    /// (overwriting whatever the caller sent there), with its line.
    pub key_argument: Option<Lined<ArgPath>>,
    /// The claim's lease.
    pub lease: Duration,
    /// What to do when an earlier attempt's outcome is unknown.
    pub on_uncertain: OnUncertain,
    /// What an upstream `isError` result means.
    pub errors: Errors,
    /// Catalog field to tool argument, in the catalog's field order.
    pub fields: Vec<Field>,
    /// The catalog field that carries the intent reference.
    pub reference_field: String,
    /// The line of its `tool` key, for later messages.
    pub line: usize,
    /// The request `_meta` entries frozen with the intent on its first
    /// call (`freeze_meta`): every later forward sends the frozen ones.
    pub freeze_meta: Vec<String>,
    /// Whether a call that diverges from an intent whose action failed
    /// (nothing executed) supersedes it (`supersede_failed = true`): the
    /// new values run under a key of their own, audited.
    pub supersede_failed: bool,
}

impl Guard {
    /// Whether a call is the protocol's handshake rather than an action: the
    /// guard reads fields from `_meta` and the request carries none of
    /// those entries (an x402 call without its payment, which can pay
    /// nothing and is answered with the payment's requirements).
    pub fn handshake(&self, meta: &Map<String, Value>) -> bool {
        let mut entries = self
            .fields
            .iter()
            .filter(|f| f.arg.in_meta())
            .filter_map(|f| f.arg.tokens().first())
            .peekable();
        entries.peek().is_some() && entries.all(|e| !meta.contains_key(e))
    }

    /// The `_meta` entries its fields read, each once, in field order.
    pub fn meta_entries(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for f in self.fields.iter().filter(|f| f.arg.in_meta()) {
            if let Some(e) = f.arg.tokens().first() {
                if !out.contains(e) {
                    out.push(e.clone());
                }
            }
        }
        out
    }

    /// The line of its first field read from `_meta` (its `tool` line when
    /// none is).
    pub fn meta_field_line(&self) -> usize {
        self.fields
            .iter()
            .find(|f| f.arg.in_meta())
            .map_or(self.line, |f| f.line)
    }

    /// How it asks the upstream about an unknown outcome, when it does.
    pub fn lookup(&self) -> Option<&Lookup> {
        match &self.on_uncertain {
            OnUncertain::Lookup(l) => Some(l),
            _ => None,
        }
    }
}

/// A checked guard file.
#[derive(Debug, Clone)]
pub struct GuardFile {
    /// The upstream, when the file names one (a command-line option may
    /// name it instead).
    pub upstream: Option<Upstream>,
    /// The guarded tools.
    pub guards: Vec<Guard>,
    /// The variables a command upstream is started with, besides `PATH`,
    /// `HOME` and `LANG` ([`UPSTREAM_INHERITS`]): it inherits nothing else
    /// of the gateway's environment (idem's secrets live there).
    pub upstream_env: BTreeMap<String, String>,
    /// Whether idem's HTTP client to a URL upstream honours the proxy
    /// variables of its environment (off unless the file says so).
    pub proxy_from_env: bool,
    /// The user a command upstream runs as (`[upstream] user`): its own
    /// uid, gid and home, so it cannot read idem's data directory.
    pub upstream_user: Option<String>,
    /// The tenants a gateway mounted on `idem serve` answers (`tenants =
    /// [...]`, required there): one upstream and its credentials serve
    /// the tenants named, and another tenant's token is refused.
    pub tenants: Option<Vec<idem_core::TenantId>>,
    /// Whether unguarded tools, resources and prompts pass through
    /// (`pass_through`; unset: yes over stdio, no on a mount).
    pub pass_through: Option<bool>,
    /// The line `tenants` is on (1 when absent), for messages.
    pub tenants_line: usize,
    /// The file, as given, for messages.
    pub path: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    tenants: Option<Spanned<Vec<String>>>,
    pass_through: Option<bool>,
    upstream: Option<Spanned<RawUpstream>>,
    #[serde(default)]
    guard: Vec<Spanned<RawGuard>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawUpstream {
    command: Option<Vec<String>>,
    url: Option<String>,
    #[serde(default)]
    headers: BTreeMap<String, String>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    #[serde(default)]
    proxy_from_env: bool,
    user: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawGuard {
    tool: Spanned<String>,
    action: Spanned<String>,
    key_argument: Option<Spanned<String>>,
    lease_ms: Option<Spanned<u64>>,
    on_uncertain: Option<RawOnUncertain>,
    errors: Option<Errors>,
    fields: Spanned<BTreeMap<Spanned<String>, Spanned<String>>>,
    freeze_meta: Option<Spanned<Vec<String>>>,
    lookup: Option<Spanned<RawLookup>>,
    supersede_failed: Option<bool>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawLookup {
    tool: String,
    #[serde(default)]
    arguments: BTreeMap<String, String>,
    executed: RawVerdict,
    not_executed: RawVerdict,
    result: Option<String>,
    #[serde(default)]
    matches: BTreeMap<String, String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawVerdict {
    pointer: String,
    #[serde(rename = "in")]
    values: Vec<toml::Value>,
}

impl GuardFile {
    /// Reads and checks the file at `path` against `catalog`.
    pub fn load(path: &std::path::Path, catalog: &Catalog) -> Result<Self, GuardFileError> {
        let shown = path.display().to_string();
        let whole = |message: String| GuardFileError {
            path: shown.clone(),
            line: 1,
            message,
        };
        let meta = std::fs::metadata(path).map_err(|e| whole(format!("cannot read it: {e}")))?;
        if meta.len() > MAX_BYTES as u64 {
            return Err(whole(format!(
                "the file is {} bytes; a guard file is at most {MAX_BYTES}",
                meta.len()
            )));
        }
        let text =
            std::fs::read_to_string(path).map_err(|e| whole(format!("cannot read it: {e}")))?;
        Self::parse(&shown, &text, catalog)
    }

    /// Checks the text of a guard file (`path` only names it in messages).
    pub fn parse(path: &str, text: &str, catalog: &Catalog) -> Result<Self, GuardFileError> {
        let at = |span: std::ops::Range<usize>, message: String| GuardFileError {
            path: path.to_owned(),
            line: line_of(text, span.start),
            message,
        };
        if text.len() > MAX_BYTES {
            return Err(at(
                0..0,
                format!("the file is over {MAX_BYTES} bytes; a guard file is configuration"),
            ));
        }
        let raw: RawFile = toml::from_str(text).map_err(|e| {
            at(
                e.span().unwrap_or(0..0),
                format!("not a guard file: {}", e.message()),
            )
        })?;
        let tenants_line = raw
            .tenants
            .as_ref()
            .map_or(1, |t| line_of(text, t.span().start));
        let tenants = raw.tenants.map(|t| tenants_of(t, &at)).transpose()?;
        let (upstream, upstream_env, proxy_from_env, upstream_user) = match raw.upstream {
            None => (None, BTreeMap::new(), false, None),
            Some(u) => {
                let span = u.span();
                let u = u.into_inner();
                let (env, proxy, user) = (u.env.clone(), u.proxy_from_env, u.user.clone());
                check_upstream(&u).map_err(|m| at(span.clone(), m))?;
                (
                    Some(upstream_of(u).map_err(|m| at(span, m))?),
                    env,
                    proxy,
                    user,
                )
            }
        };
        if raw.guard.is_empty() {
            return Err(at(
                0..0,
                "no [[guard]] table: name at least one tool to guard".to_owned(),
            ));
        }
        if raw.guard.len() > MAX_GUARDS {
            return Err(at(
                0..0,
                format!(
                    "{} guards; a file guards at most {MAX_GUARDS} tools",
                    raw.guard.len()
                ),
            ));
        }
        let mut guards: Vec<Guard> = Vec::with_capacity(raw.guard.len());
        for g in raw.guard {
            let g = guard_of(g.into_inner(), &guards, text, catalog, &at)?;
            guards.push(g);
        }
        // One upstream and its credentials serve every tenant named: a
        // record found by anything but idem's key (tenant-scoped) may be
        // another tenant's charge with the same reference.
        if let Some(ids) = tenants.as_ref().filter(|ids| ids.len() > 1) {
            for g in &guards {
                let Some(l) = g.lookup() else { continue };
                if !l.arguments.iter().any(|(_, a)| *a == LookupArgument::Key) {
                    return Err(GuardFileError {
                        path: path.to_owned(),
                        line: l.line,
                        message: format!(
                            "[guard.lookup] of {:?} finds the provider's record by the frozen arguments only, and this file serves {} tenants (line {tenants_line}) through one upstream: another tenant's charge with the same reference would settle this one. Give the lookup an argument = \"$key\" (idem's key, which the provider keeps), or serve each tenant from its own file",
                            g.tool,
                            ids.len()
                        ),
                    });
                }
            }
        }
        Ok(GuardFile {
            upstream,
            guards,
            upstream_env,
            proxy_from_env,
            upstream_user,
            tenants,
            pass_through: raw.pass_through,
            tenants_line,
            path: path.to_owned(),
        })
    }

    /// The guard of `tool`, if it is guarded.
    pub fn guard(&self, tool: &str) -> Option<&Guard> {
        self.guards.iter().find(|g| g.tool == tool)
    }
}

/// `tenants = [...]`: not empty, each a tenant id.
fn tenants_of(
    t: Spanned<Vec<String>>,
    at: &dyn Fn(std::ops::Range<usize>, String) -> GuardFileError,
) -> Result<Vec<idem_core::TenantId>, GuardFileError> {
    let span = t.span();
    let names = t.into_inner();
    if names.is_empty() {
        return Err(at(
            span,
            "tenants is empty: name the tenants this gateway serves".into(),
        ));
    }
    let mut ids = Vec::with_capacity(names.len());
    for n in names {
        ids.push(idem_core::TenantId::try_from(n.as_str()).map_err(|e| {
            at(
                span.clone(),
                format!("tenants: {n:?} is not a tenant id: {e}"),
            )
        })?);
    }
    Ok(ids)
}

/// `[upstream]`'s environment and user: variable names a process can
/// take, and a user only for a command upstream.
fn check_upstream(u: &RawUpstream) -> Result<(), String> {
    for name in u.env.keys() {
        if name.is_empty() || name.contains(['=', '\0']) {
            return Err(format!("[upstream] env: {name:?} is not a variable name"));
        }
    }
    if let Some(user) = &u.user {
        if user.is_empty() || u.url.is_some() {
            return Err("[upstream] user names the account a `command` upstream runs as (not empty; a url upstream runs elsewhere)".into());
        }
    }
    Ok(())
}

/// One `[[guard]]` table, checked against the catalog and the guards
/// before it (`taken`).
fn guard_of(
    g: RawGuard,
    taken: &[Guard],
    text: &str,
    catalog: &Catalog,
    at: &dyn Fn(std::ops::Range<usize>, String) -> GuardFileError,
) -> Result<Guard, GuardFileError> {
    let tool_span = g.tool.span();
    if taken.iter().any(|o| o.tool == *g.tool.get_ref()) {
        return Err(at(
            tool_span,
            format!("tool {:?} is guarded twice", g.tool.get_ref()),
        ));
    }
    let action_span = g.action.span();
    let spec = catalog.action(g.action.get_ref()).map_err(|_| {
        let known: Vec<&str> = catalog.actions().map(|a| a.action.as_str()).collect();
        at(
            action_span.clone(),
            format!(
                "unknown action {:?}; the catalog has {}",
                g.action.get_ref(),
                known.join(", ")
            ),
        )
    })?;
    let lease = match &g.lease_ms {
        Some(l) => {
            idem_wire::LeaseMs::new(*l.get_ref()).map_err(|e| at(l.span(), e.to_string()))?
        }
        None => idem_wire::LeaseMs::DEFAULT,
    };
    let fields_span = g.fields.span();
    let mapped = g.fields.into_inner();
    for field in mapped.keys() {
        if !spec.fields().iter().any(|f| &*f.name == field.get_ref()) {
            let names: Vec<&str> = spec.fields().iter().map(|f| &*f.name).collect();
            return Err(at(
                field.span(),
                format!(
                    "action {} has no field {:?}; its fields are {}",
                    spec.action,
                    field.get_ref(),
                    names.join(", ")
                ),
            ));
        }
    }
    let mut fields: Vec<Field> = Vec::new();
    let mut field_spans = Vec::new();
    for f in spec.fields() {
        let Some((_, arg)) = mapped.iter().find(|(k, _)| *k.get_ref() == *f.name) else {
            return Err(at(
                fields_span,
                format!(
                    "no argument maps to field {:?} of {}: add `{} = \"<tool argument>\"` under [guard.fields]",
                    &*f.name, spec.action, &*f.name
                ),
            ));
        };
        let path = ArgPath::parse_field(arg.get_ref()).map_err(|m| at(arg.span(), m))?;
        fields.push(Field {
            name: f.name.to_string(),
            arg: path,
            line: line_of(text, arg.span().start),
        });
        field_spans.push(arg.span());
    }
    let key_argument = match &g.key_argument {
        Some(k) if !k.get_ref().is_empty() => {
            let path = ArgPath::parse(k.get_ref()).map_err(|m| at(k.span(), m))?;
            if let Some(field) = fields.iter().find(|f| overlaps(&f.arg, &path)) {
                return Err(at(
                    k.span(),
                    format!(
                        "key_argument {path} is (or holds, or is inside) the argument of field {:?}: idem overwrites it with the key, so the field would never be the caller's",
                        field.name
                    ),
                ));
            }
            Some(Lined {
                value: path,
                line: line_of(text, k.span().start),
            })
        }
        _ => None,
    };
    let freeze_meta = match g.freeze_meta {
        None => Vec::new(),
        Some(f) => {
            let span = f.span();
            let names = f.into_inner();
            if names.len() > MAX_FROZEN_META {
                return Err(at(
                    span,
                    format!(
                        "freeze_meta names {} entries; at most {MAX_FROZEN_META}",
                        names.len()
                    ),
                ));
            }
            for (i, n) in names.iter().enumerate() {
                if n.is_empty() || n == "progressToken" || n.starts_with("io.modelcontextprotocol/")
                {
                    return Err(at(span, format!("freeze_meta: {n:?} is not an entry a call forwards (the agent's own session keeps it)")));
                }
                if idem_wire::trace::is_trace_entry(n) {
                    return Err(at(span, format!("freeze_meta: {n:?} is W3C trace context, new on every attempt: frozen, every retry would diverge from the first. idem continues the caller's trace and passes it on without freezing it; remove {n:?}")));
                }
                if names[..i].contains(n) {
                    return Err(at(span, format!("freeze_meta names {n:?} twice")));
                }
            }
            names
        }
    };
    // A key read from `_meta` is only as good as what a resend
    // carries: unfrozen, a retry's new entry (a new signature, a
    // new nonce) would go out under the first call's key.
    for (
        Field {
            name: field,
            arg: path,
            ..
        },
        span,
    ) in fields.iter().zip(&field_spans)
    {
        let entry = path
            .tokens()
            .first()
            .map(String::as_str)
            .unwrap_or_default();
        if let Some(advice) = slash_advice(path, &freeze_meta) {
            return Err(at(
                span.clone(),
                format!("field {field:?} reads the _meta entry {entry:?}, {advice}"),
            ));
        }
        if path.in_meta() && idem_wire::trace::is_trace_entry(entry) {
            return Err(at(
                span.clone(),
                format!(
                    "field {field:?} reads the _meta entry {entry:?}, W3C trace context, which is new on every attempt: a key over it would differ on every retry and the effect would run again. Key the call on what identifies the intent (an argument, or an entry the agent keeps across retries)"
                ),
            ));
        }
        if path.in_meta() && !freeze_meta.iter().any(|n| n == entry) {
            return Err(at(
                span.clone(),
                format!(
                    "field {field:?} reads the _meta entry {entry:?}, which freeze_meta does not name: a resend would carry whatever a retry sent there; add freeze_meta = [{entry:?}]"
                ),
            ));
        }
    }
    let on_uncertain = match (g.on_uncertain.unwrap_or(RawOnUncertain::Refuse), g.lookup) {
        (RawOnUncertain::Lookup, None) => {
            return Err(at(
                tool_span,
                "on_uncertain = \"lookup\" needs a [guard.lookup] table: the tool that reads the provider's record, its arguments, and what its result says when executed or not".into(),
            ))
        }
        (RawOnUncertain::Lookup, Some(l)) => {
            let span = l.span();
            OnUncertain::Lookup(Box::new(lookup_of(l.into_inner(), line_of(text, span.start), g.tool.get_ref(), spec).map_err(|m| at(span, m))?))
        }
        (_, Some(l)) => {
            return Err(at(
                l.span(),
                "[guard.lookup] is used only with on_uncertain = \"lookup\"".into(),
            ))
        }
        (RawOnUncertain::Refuse, None) => OnUncertain::Refuse,
        (RawOnUncertain::Resend, None) => OnUncertain::Resend,
    };
    Ok(Guard {
        tool: g.tool.into_inner(),
        action: spec.action.clone(),
        key_argument,
        lease: lease.duration(),
        on_uncertain,
        errors: g.errors.unwrap_or(Errors::Retryable),
        fields,
        reference_field: spec.reference.clone(),
        line: line_of(text, tool_span.start),
        freeze_meta,
        supersede_failed: g.supersede_failed.unwrap_or(false),
    })
}

fn upstream_of(u: RawUpstream) -> Result<Upstream, String> {
    match (u.command, u.url) {
        (Some(_), Some(_)) => Err("[upstream] takes `command` or `url`, not both".into()),
        (Some(c), None) if c.is_empty() || c[0].is_empty() => {
            Err("[upstream] command is empty: name the program and its arguments".into())
        }
        (Some(c), None) => Ok(Upstream::Command(c)),
        (None, Some(url)) if url.starts_with("http://") || url.starts_with("https://") => {
            Ok(Upstream::Url {
                url,
                headers: u.headers,
            })
        }
        (None, Some(url)) => Err(format!("[upstream] url {url:?} is not an http(s) address")),
        (None, None) => Err("[upstream] names neither `command` nor `url`".into()),
    }
}

/// Whether something in a tool's `inputSchema` can hold the value `path`
/// names. Local `$ref`s, `anyOf`/`oneOf`/`allOf` and array `items` are
/// followed; a member must be declared in `properties` (or by an
/// `additionalProperties` schema), as the tool may drop one it does not
/// declare, except below the root in an object or array that declares no
/// members at all (free-form). The walk is bounded, so a schema that
/// refers to itself ends.
pub fn schema_holds(root: &Value, path: &ArgPath) -> bool {
    let mut budget = 1024usize;
    reach(root, root, path.tokens(), true, &mut budget)
}

fn reach(root: &Value, s: &Value, tokens: &[String], at_root: bool, budget: &mut usize) -> bool {
    if *budget == 0 {
        return false;
    }
    *budget -= 1;
    let Some((token, rest)) = tokens.split_first() else {
        return true;
    };
    let Some(o) = s.as_object() else {
        // The schema `true` holds anything; `false` nothing.
        return s == &Value::Bool(true);
    };
    if let Some(target) = o
        .get("$ref")
        .and_then(Value::as_str)
        .and_then(|r| r.strip_prefix('#'))
        .and_then(|p| root.pointer(p))
    {
        if reach(root, target, tokens, at_root, budget) {
            return true;
        }
    }
    for combinator in ["anyOf", "oneOf", "allOf"] {
        for alternative in o
            .get(combinator)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if reach(root, alternative, tokens, at_root, budget) {
                return true;
            }
        }
    }
    if let Some(child) = o.get("properties").and_then(|p| p.get(token)) {
        if reach(root, child, rest, false, budget) {
            return true;
        }
    }
    // `additionalProperties: true` (or a schema) holds any member: mcp.md
    // says a pointer into such an object is accepted.
    if let Some(extra) = o
        .get("additionalProperties")
        .filter(|v| v.is_object() || **v == Value::Bool(true))
    {
        if reach(root, extra, rest, false, budget) {
            return true;
        }
    }
    if let Some(i) = index(token) {
        let item = o
            .get("prefixItems")
            .and_then(Value::as_array)
            .and_then(|p| p.get(i))
            .or_else(|| o.get("items").filter(|v| v.is_object() || v.is_boolean()));
        if let Some(item) = item {
            if reach(root, item, rest, false, budget) {
                return true;
            }
        }
    }
    let types: Vec<&str> = match o.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
        _ => vec![],
    };
    let container = types.is_empty() || types.iter().any(|t| *t == "object" || *t == "array");
    let declares = [
        "properties",
        "additionalProperties",
        "items",
        "prefixItems",
        "$ref",
        "anyOf",
        "oneOf",
        "allOf",
    ]
    .iter()
    .any(|k| o.contains_key(*k));
    !at_root && container && !declares
}

fn lookup_of(
    raw: RawLookup,
    line: usize,
    guarded: &str,
    spec: &idem_core::ActionSpec,
) -> Result<Lookup, String> {
    if raw.tool.is_empty() {
        return Err(
            "[guard.lookup] tool is empty: name the upstream tool that reads the provider's record"
                .into(),
        );
    }
    if raw.tool == guarded {
        return Err(format!(
            "[guard.lookup] tool {:?} is the guarded tool itself: a lookup must read, never act",
            raw.tool
        ));
    }
    let mut arguments = Vec::new();
    for (name, source) in raw.arguments {
        let source = if source == "$key" {
            LookupArgument::Key
        } else {
            LookupArgument::Frozen(
                ArgPath::parse(&source)
                    .map_err(|m| format!("[guard.lookup] arguments.{name}: {m}"))?,
            )
        };
        arguments.push((name, source));
    }
    let verdict = |what: &str, v: RawVerdict| -> Result<Verdict, String> {
        if !(v.pointer.is_empty() || v.pointer.starts_with('/')) {
            return Err(format!(
                "[guard.lookup] {what}.pointer {:?} is not a JSON Pointer (\"\" or starting with /)",
                v.pointer
            ));
        }
        if v.values.is_empty() {
            return Err(format!(
                "[guard.lookup] {what}.in is empty: list the values that mean {what}"
            ));
        }
        let values = v
            .values
            .into_iter()
            .map(|x| serde_json::to_value(x).map_err(|e| format!("[guard.lookup] {what}.in: {e}")))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Verdict {
            pointer: v.pointer,
            values,
        })
    };
    let executed = verdict("executed", raw.executed)?;
    let not_executed = verdict("not_executed", raw.not_executed)?;
    if executed.pointer == not_executed.pointer {
        if let Some(both) = executed
            .values
            .iter()
            .find(|v| not_executed.values.contains(v))
        {
            return Err(format!(
                "[guard.lookup] {both} is in both executed.in and not_executed.in: a result cannot mean both"
            ));
        }
    }
    if let Some(r) = &raw.result {
        if !(r.is_empty() || r.starts_with('/')) {
            return Err(format!(
                "[guard.lookup] result {r:?} is not a JSON Pointer (\"\" or starting with /)"
            ));
        }
    }
    let mut matches = Vec::new();
    for (field, pointer) in raw.matches {
        if !spec.fields().iter().any(|f| *f.name == *field) {
            let names: Vec<&str> = spec.fields().iter().map(|f| &*f.name).collect();
            return Err(format!(
                "[guard.lookup] matches.{field}: action {} has no field {field:?}; its fields are {}",
                spec.action,
                names.join(", ")
            ));
        }
        if !pointer.starts_with('/') {
            return Err(format!(
                "[guard.lookup] matches.{field} = {pointer:?} is not a JSON Pointer into the lookup's result (it starts with /)"
            ));
        }
        matches.push((field, pointer));
    }
    Ok(Lookup {
        tool: raw.tool,
        arguments,
        executed,
        not_executed,
        result: raw.result,
        matches,
        line,
    })
}

/// `_meta` entries whose names hold a `/` (a JSON Pointer writes it `~1`),
/// as the payment protocols name them.
pub const KNOWN_SLASHED_ENTRIES: [&str; 2] = ["x402/payment", "org.paymentauth/credential"];

/// For a `meta:` pointer whose first tokens spell an entry whose name holds
/// a `/` (`meta:/x402/payment/payer` for the entry `x402/payment`), what
/// to write instead: read as written, it names an entry no call carries,
/// and a guard reading nothing would pass every payment unrecorded.
fn slash_advice(path: &ArgPath, freeze_meta: &[String]) -> Option<String> {
    if !path.in_meta() {
        return None;
    }
    let tokens = path.tokens();
    let slashed = freeze_meta
        .iter()
        .map(String::as_str)
        .chain(KNOWN_SLASHED_ENTRIES)
        .filter(|e| e.contains('/'));
    for entry in slashed {
        let parts: Vec<&str> = entry.split('/').collect();
        let spelled = tokens.len() >= parts.len()
            && tokens.iter().zip(&parts).all(|(t, p)| t == p)
            && tokens.first().map(String::as_str) != Some(entry);
        if spelled {
            let rest: String = tokens[parts.len()..]
                .iter()
                .map(|t| format!("/{}", t.replace('~', "~0").replace('/', "~1")))
                .collect();
            let escaped = entry.replace('~', "~0").replace('/', "~1");
            return Some(format!(
                "which no call carries: in a JSON Pointer a `/` inside an entry's name is written `~1`, so the entry {entry:?} is read by \"meta:/{escaped}{rest}\" (and frozen with freeze_meta = [{entry:?}])"
            ));
        }
    }
    None
}

/// Whether one path is the other or inside it.
fn overlaps(a: &ArgPath, b: &ArgPath) -> bool {
    if a.in_meta() != b.in_meta() {
        return false;
    }
    let n = a.tokens().len().min(b.tokens().len());
    a.tokens()[..n] == b.tokens()[..n]
}

fn line_of(text: &str, offset: usize) -> usize {
    text.get(..offset.min(text.len()))
        .map(|t| t.bytes().filter(|b| *b == b'\n').count() + 1)
        .unwrap_or(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"
[upstream]
command = ["python3", "pay.py"]

[[guard]]
tool = "create_pix_charge"
action = "pix.cobranca"
key_argument = "idempotency_key"
on_uncertain = "resend"
[guard.fields]
cliente_id = "customer_id"
valor = "amount"
chave_pix_destino = "pix_key"
referencia_intencao = "invoice_ref"
"#;

    fn parse(text: &str) -> Result<GuardFile, GuardFileError> {
        GuardFile::parse("g.toml", text, &Catalog::builtin())
    }

    /// The book's card example: its catalog and its guard file read, and
    /// every field of the action has its argument.
    #[test]
    fn the_card_example_reads() {
        let catalog =
            Catalog::from_toml(include_str!("../../examples/mcp/card/catalog.toml")).unwrap();
        let f = GuardFile::parse(
            "guard.toml",
            include_str!("../../examples/mcp/card/guard.toml"),
            &catalog,
        )
        .unwrap();
        let g = f.guard("charge_card").unwrap();
        assert_eq!(g.fields.len(), 5);
        assert_eq!(g.reference_field, "order_id");
        assert_eq!(f.upstream_env["PSP_API_KEY"], "sk_test_…");
        assert_eq!(f.pass_through, None);
    }

    /// The ACP and x402 examples the book includes and the tests run.
    #[test]
    fn the_protocol_examples_read() {
        let read = |catalog: &str, guard: &str| {
            let catalog = Catalog::from_toml(catalog).unwrap();
            GuardFile::parse("guard.toml", guard, &catalog).unwrap()
        };
        let acp = read(
            include_str!("../../examples/mcp/acp/catalog.toml"),
            include_str!("../../examples/mcp/acp/guard.toml"),
        );
        let g = acp.guard("complete_checkout_session").unwrap();
        assert!(matches!(g.on_uncertain, OnUncertain::Lookup(_)));
        assert_eq!(g.lookup().unwrap().tool, "get_checkout_session");
        assert_eq!(
            g.key_argument.as_ref().unwrap().value.tokens(),
            ["meta", "idempotency_key"]
        );
        let x402 = read(
            include_str!("../../examples/mcp/x402/catalog.toml"),
            include_str!("../../examples/mcp/x402/guard.toml"),
        );
        let g = x402.guard("get_report").unwrap();
        assert_eq!(g.freeze_meta, ["x402/payment"]);
        assert_eq!(g.fields.iter().filter(|f| f.arg.in_meta()).count(), 4);
        assert!(g.handshake(&Map::new()));
        let paid: Map<String, Value> =
            serde_json::from_str(r#"{"x402/payment": {}, "trace": 1}"#).unwrap();
        assert!(!g.handshake(&paid));
        // A guard that reads nothing from _meta never has a handshake.
        assert!(!acp
            .guard("complete_checkout_session")
            .unwrap()
            .handshake(&Map::new()));
    }

    #[test]
    fn a_good_file_reads_with_its_defaults() {
        let f = parse(GOOD).unwrap();
        assert_eq!(
            f.upstream,
            Some(Upstream::Command(vec!["python3".into(), "pay.py".into()]))
        );
        let g = f.guard("create_pix_charge").unwrap();
        assert_eq!(g.lease, Duration::from_millis(DEFAULT_LEASE_MS));
        assert!(matches!(g.on_uncertain, OnUncertain::Resend));
        assert_eq!(g.errors, Errors::Retryable);
        assert_eq!(g.reference_field, "referencia_intencao");
        assert_eq!(g.fields.len(), 4);
        assert_eq!(g.line, 6);
    }

    #[test]
    fn each_mistake_names_its_line() {
        let cases = [
            (
                GOOD.replace("pix.cobranca", "pix.nope"),
                7,
                "unknown action",
            ),
            (
                GOOD.replace(
                    "valor = \"amount\"",
                    "valor = \"amount\"\ntroco = \"change\"",
                ),
                13,
                "no field \"troco\"",
            ),
            (
                GOOD.replace("valor = \"amount\"\n", ""),
                10,
                "no argument maps to field \"valor\"",
            ),
            (
                GOOD.replace("on_uncertain = \"resend\"", "on_uncertain = \"maybe\""),
                9,
                "not a guard file",
            ),
            (
                GOOD.replace("key_argument", "lease_ms = 0\nkey_argument"),
                8,
                "lease_ms must be",
            ),
            (GOOD.replace("tool =", "tol ="), 6, "not a guard file"),
            (
                GOOD.replace("command = [\"python3\", \"pay.py\"]", "command = []"),
                2,
                "command is empty",
            ),
        ];
        for (text, line, says) in cases {
            let e = parse(&text).unwrap_err();
            assert!(e.message.contains(says), "{e}");
            assert_eq!(e.line, line, "{e}");
        }
    }

    #[test]
    fn a_tool_guarded_twice_and_an_empty_file_are_refused() {
        let twice = format!("{GOOD}\n[[guard]]\ntool = \"create_pix_charge\"\naction = \"pix.cobranca\"\n[guard.fields]\n");
        assert!(parse(&twice).unwrap_err().message.contains("guarded twice"));
        assert!(parse("").unwrap_err().message.contains("no [[guard]]"));
        let huge = "#".repeat(MAX_BYTES + 1);
        assert!(parse(&huge).unwrap_err().message.contains("over"));
    }

    fn path(text: &str) -> ArgPath {
        ArgPath::parse(text).unwrap()
    }

    #[test]
    fn a_pointer_reads_and_writes_nested_arguments() {
        let args: Map<String, Value> = serde_json::from_str(
            r#"{"payload": {"totals": [{"amount": "42.50"}], "a/b": 1, "m~n": 2}, "plain": "x"}"#,
        )
        .unwrap();
        assert_eq!(path("plain").get(&args), Some(&Value::from("x")));
        assert_eq!(
            path("/payload/totals/0/amount").get(&args),
            Some(&Value::from("42.50"))
        );
        assert_eq!(path("/payload/a~1b").get(&args), Some(&Value::from(1)));
        assert_eq!(path("/payload/m~0n").get(&args), Some(&Value::from(2)));
        assert_eq!(path("/payload/totals/1/amount").get(&args), None);
        assert_eq!(
            path("/payload/totals/00/amount").get(&args),
            None,
            "no leading zero"
        );
        // The key goes where the pointer says, the objects on the way made.
        let mut w = args.clone();
        path("/meta/idempotency_key")
            .set(&mut w, Value::from("k"))
            .unwrap();
        assert_eq!(w["meta"]["idempotency_key"], "k");
        path("/payload/totals/0/key")
            .set(&mut w, Value::from("k"))
            .unwrap();
        assert_eq!(w["payload"]["totals"][0]["key"], "k");
        assert!(path("/plain/inner").set(&mut w, Value::from("k")).is_err());
        assert!(path("/payload/totals/5/key")
            .set(&mut w, Value::from("k"))
            .is_err());
        for bad in ["", "/a~2", "/a~", "meta:/x402~1payment"] {
            assert!(ArgPath::parse(bad).is_err(), "{bad}");
        }
        let m = ArgPath::parse_field("meta:/x402~1payment/payload/from").unwrap();
        assert!(m.in_meta());
        assert_eq!(m.to_string(), "meta:/x402~1payment/payload/from");
        let meta: Map<String, Value> =
            serde_json::from_str(r#"{"x402/payment": {"payload": {"from": "0xab"}}}"#).unwrap();
        assert_eq!(m.read(&w, &meta), Some(&Value::from("0xab")));
        assert_eq!(m.read(&meta, &w), None);
        for bad in ["meta:", "meta:x402", "meta:/", "meta:/a~2"] {
            assert!(ArgPath::parse_field(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_meta_field_needs_its_entry_frozen() {
        let text = GOOD.replace(
            "cliente_id = \"customer_id\"",
            "cliente_id = \"meta:/x402~1payment/from\"",
        );
        let e = parse(&text).unwrap_err();
        assert!(e.message.contains("freeze_meta does not name"), "{e}");
        assert_eq!(e.line, 11, "{e}");
        let frozen = text.replace(
            "[guard.fields]",
            "freeze_meta = [\"x402/payment\"]\n[guard.fields]",
        );
        let f = parse(&frozen).unwrap();
        assert!(f.guards[0].fields.iter().any(|f| f.arg.in_meta()));
        // A key argument never collides with a `_meta` value.
        let g = frozen.replace(
            "key_argument = \"idempotency_key\"",
            "key_argument = \"/x402/payment\"",
        );
        assert!(parse(&g).is_ok());
    }

    #[test]
    fn the_schema_walk_follows_refs_combinators_and_items() {
        let schema: Value = serde_json::from_str(
            r##"{"type": "object",
                "properties": {
                  "meta": {"$ref": "#/$defs/Meta"},
                  "payload": {"anyOf": [{"$ref": "#/$defs/Payload"}, {"type": "null"}]},
                  "extra": {"type": "object"},
                  "name": {"type": "string"},
                  "loop": {"$ref": "#/properties/loop"}
                },
                "$defs": {
                  "Meta": {"type": "object", "properties": {"idempotency_key": {"type": "string"}}},
                  "Payload": {"allOf": [{"properties": {"totals": {"type": "array", "items": {"$ref": "#/$defs/Total"}}}}]},
                  "Total": {"type": "object", "properties": {"amount": {"type": "string"}}, "additionalProperties": false}
                }}"##,
        )
        .unwrap();
        for holds in [
            "/meta/idempotency_key",
            "/payload/totals/0/amount",
            "/extra/anything/deep",
            "/name",
        ] {
            assert!(schema_holds(&schema, &path(holds)), "{holds}");
        }
        for not in [
            "/meta/idempotency_kye",
            "/payload/totals/0/amout",
            "/payload/totals/x",
            "/name/inner",
            "/nope",
            "/loop/x",
        ] {
            assert!(!schema_holds(&schema, &path(not)), "{not}");
        }
    }

    #[test]
    fn a_key_argument_over_a_field_is_refused() {
        let text = GOOD.replace(
            "key_argument = \"idempotency_key\"",
            "key_argument = \"customer_id\"",
        );
        assert!(parse(&text)
            .unwrap_err()
            .message
            .contains("overwrites it with the key"));
    }

    /// `meta:/x402/payment/payer` reads an entry `x402` no call carries:
    /// refused whatever freeze_meta says, with the `~1` spelling to write.
    #[test]
    fn an_unescaped_slash_in_a_meta_entry_is_refused_with_its_spelling() {
        for frozen in [r#"["x402/payment"]"#, r#"["x402"]"#, "[]"] {
            let text = GOOD
                .replace(
                    "cliente_id = \"customer_id\"",
                    "cliente_id = \"meta:/x402/payment/payload/from\"",
                )
                .replace(
                    "[guard.fields]",
                    &format!("freeze_meta = {frozen}\n[guard.fields]"),
                );
            let e = parse(&text).unwrap_err();
            assert!(
                e.message.contains("\"meta:/x402~1payment/payload/from\""),
                "{frozen}: {e}"
            );
            assert!(e.message.contains("~1"), "{e}");
            assert_eq!(e.line, 12, "{frozen}: {e}");
        }
        // A frozen entry of the operator's own with a slash in its name.
        let text = GOOD
            .replace(
                "cliente_id = \"customer_id\"",
                "cliente_id = \"meta:/com.acme/pay/from\"",
            )
            .replace(
                "[guard.fields]",
                "freeze_meta = [\"com.acme/pay\"]\n[guard.fields]",
            );
        let e = parse(&text).unwrap_err();
        assert!(e.message.contains("meta:/com.acme~1pay/from"), "{e}");
    }

    const LOOKUP: &str = r#"
[guard.lookup]
tool = "get_charge"
arguments = { ref = "invoice_ref" }
executed = { pointer = "/status", in = ["paid"] }
not_executed = { pointer = "/status", in = ["none"] }
"#;

    fn with_lookup(extra: &str) -> String {
        format!(
            "{}{LOOKUP}{extra}",
            GOOD.replace("on_uncertain = \"resend\"", "on_uncertain = \"lookup\"")
        )
    }

    /// One upstream for several tenants: a lookup by reference could find
    /// another tenant's charge, so only lookups by idem's key start.
    #[test]
    fn a_mount_of_several_tenants_takes_only_key_lookups() {
        let shared = format!("tenants = [\"alpha\", \"beta\"]\n{}", with_lookup(""));
        let e = parse(&shared).unwrap_err();
        assert!(e.message.contains("$key"), "{e}");
        assert!(e.message.contains("2 tenants"), "{e}");
        assert_eq!(e.line, 17, "{e}");
        let keyed = shared.replace(
            "arguments = { ref = \"invoice_ref\" }",
            "arguments = { ref = \"invoice_ref\", idempotency_key = \"$key\" }",
        );
        assert!(parse(&keyed).is_ok());
        let one = format!("tenants = [\"alpha\"]\n{}", with_lookup(""));
        assert!(
            parse(&one).is_ok(),
            "one tenant per file may look up by reference"
        );
    }

    #[test]
    fn lookup_matches_name_the_actions_fields_and_pointers() {
        let f = parse(&with_lookup("matches = { valor = \"/amount\" }\n")).unwrap();
        let l = f.guards[0].lookup().unwrap();
        assert_eq!(l.matches, vec![("valor".to_owned(), "/amount".to_owned())]);
        for (bad, says) in [
            (
                "matches = { amount = \"/amount\" }\n",
                "has no field \"amount\"",
            ),
            ("matches = { valor = \"amount\" }\n", "not a JSON Pointer"),
        ] {
            let e = parse(&with_lookup(bad)).unwrap_err();
            assert!(e.message.contains(says), "{e}");
            assert_eq!(e.line, 16, "{e}");
        }
    }

    #[test]
    fn a_pointer_into_an_open_object_is_held() {
        let schema: Value = serde_json::from_str(
            r#"{"type": "object", "properties": {"meta": {"type": "object", "additionalProperties": true}},
                "additionalProperties": true}"#,
        )
        .unwrap();
        for holds in ["/meta/idempotency_key", "/meta/a/b", "/anything"] {
            assert!(schema_holds(&schema, &path(holds)), "{holds}");
        }
        let closed: Value = serde_json::from_str(
            r#"{"type": "object", "properties": {"meta": {"type": "object", "properties": {"x": {}}, "additionalProperties": false}}}"#,
        )
        .unwrap();
        assert!(!schema_holds(&closed, &path("/meta/idempotency_key")));
    }

    #[test]
    fn freeze_meta_names_forwarded_entries_once_each() {
        let with = |v: &str| {
            GOOD.replace(
                "[guard.fields]",
                &format!("freeze_meta = {v}\n[guard.fields]"),
            )
        };
        let g = parse(&with(r#"["x402/payment"]"#)).unwrap();
        assert_eq!(g.guards[0].freeze_meta, vec!["x402/payment".to_owned()]);
        for (bad, says) in [
            (r#"["progressToken"]"#, "not an entry a call forwards"),
            (r#"["a", "a"]"#, "twice"),
            (r#"[""]"#, "not an entry"),
            (r#"["traceparent"]"#, "W3C trace context"),
            (
                r#"["x402/payment", "tracestate"]"#,
                "every retry would diverge",
            ),
            (r#"["Baggage"]"#, "W3C trace context"),
        ] {
            let e = parse(&with(bad)).unwrap_err();
            assert!(e.message.contains(says), "{e}");
            assert_eq!(e.line, 10, "{e}");
        }
    }

    #[test]
    fn a_key_field_never_reads_trace_context() {
        let text = GOOD.replace(
            "cliente_id = \"customer_id\"",
            "cliente_id = \"meta:/traceparent\"",
        );
        let e = parse(&text).unwrap_err();
        assert!(e.message.contains("W3C trace context"), "{e}");
        assert!(e.message.contains("\"cliente_id\""), "{e}");
        assert_eq!(e.line, 11, "{e}");
    }
}
