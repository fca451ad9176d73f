//! The monitor as a work queue: one action's page (`/live/actions/{key}`:
//! the frozen payload, every attempt and a reconcile form), the form's
//! handler (`POST /live/actions/{key}/reconcile`, the same store operation
//! as `POST /v1/actions/{key}/reconcile`), and the uncertain list as files
//! (`/live/uncertain.csv`, `/live/uncertain.json`). Access is `/live`'s: the
//! admin sees every tenant, a tenant's token only its own.

use super::data::{IntentFacts, LiveUncertain};
use super::render::{copy_button, duration, export_query};
use super::{authorized, every_tenant, scope, viewer, LiveQuery, Viewer};
use crate::http::live::state::LiveState;
use app::i18n::{iso_utc, tr, utc_second};
use axum::extract::{Path, Query, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use axum::Form;
use idem_api::error::ApiError;
use idem_core::locale::Locale;
use idem_core::reveal_bidi;
use idem_core::{IdempotencyKey, TenantId};
use idem_store::{Action, ActionState, AttemptEnd, Intent, Outcome, ReplacedAttempt};
use maud::{html, Markup};

/// Uncertain actions one export lists, every tenant together, at most.
/// With every text a client sends bounded (255-character references and
/// customers), a row is at most about 3 KB, so an export is at most about
/// 30 MB on the wire, and far less in memory: it streams.
pub const EXPORT_MAX: u32 = 10_000;
use crate::http::live::state::EXPORTS_AT_ONCE;

/// One action as its page shows it.
struct Found {
    tenant: TenantId,
    action: Action,
    attempts: Vec<ReplacedAttempt>,
    /// `(reference, action type, intent)`, while retention keeps it.
    intent: Option<(String, String, Intent)>,
    /// The versions filed with this key (a superseded intent's), newest
    /// first, each with the key its intent has now.
    filed: Vec<(idem_store::Filed, Option<IdempotencyKey>)>,
}

/// Looks `key` up in the tenants the viewer may see (the asked one, or
/// every one for an admin who named none: keys are per tenant, so at most
/// one has it).
async fn find(
    state: &LiveState,
    viewer: &Viewer,
    tenant: Option<&str>,
    key: &IdempotencyKey,
) -> Result<Option<Found>, ApiError> {
    let q = LiveQuery {
        tenant: tenant.map(str::to_owned),
        ..LiveQuery::default()
    };
    let tenants = scope(state, viewer, &q).await?;
    let mut s = state.api.store.session().await?;
    for t in tenants {
        match s.action(&t, key).await {
            Ok(action) => {
                let attempts = s.replaced_attempts(&t, key).await?;
                let intent = s.intent_by_key(&t, key).await?;
                let mut filed = Vec::new();
                for f in s.filed_by_key(&t, key).await? {
                    let now = match s.intent(&t, &f.action, &f.reference).await {
                        Ok(i) => Some(i.key),
                        Err(idem_store::Error::NotFound) => None,
                        Err(e) => return Err(e.into()),
                    };
                    filed.push((f, now));
                }
                return Ok(Some(Found {
                    tenant: t,
                    action,
                    attempts,
                    intent,
                    filed,
                }));
            }
            Err(idem_store::Error::NotFound) => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(None)
}

/// Whether the action's outcome is unknown now (the monitor's one
/// definition: marked uncertain, or started with a lease that ran out).
fn uncertain_now(a: &Action, now: i64) -> bool {
    match a.state {
        ActionState::Uncertain => true,
        ActionState::Started => a.lease_until_ms.is_some_and(|t| t <= now),
        _ => false,
    }
}

fn last<'a>(pairs: &'a [(String, String)], key: &str) -> Option<&'a str> {
    pairs
        .iter()
        .rev()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.as_str())
        .filter(|v| !v.is_empty())
}

/// The page's markup and status, for the `/live` middleware to hand to the
/// site's shell (`app::live::LivePage` renders it).
pub async fn page(
    state: &LiveState,
    headers: &HeaderMap,
    raw_key: &str,
    pairs: &[(String, String)],
    form_token: &str,
    l: Locale,
) -> (StatusCode, String) {
    let tenant = last(pairs, "tenant");
    let notice = last(pairs, "done").or(last(pairs, "error"));
    let v = match viewer(state, headers).await {
        Ok(Some(v)) => v,
        Ok(None) => {
            return (
                StatusCode::UNAUTHORIZED,
                super::render::login_html(l, false, form_token),
            )
        }
        Err(e) => return (e.status(), unavailable(l)),
    };
    // A malformed key names no action: the same answer as an unknown one.
    let Ok(key) = IdempotencyKey::try_from(raw_key) else {
        return (StatusCode::NOT_FOUND, not_found(raw_key, l));
    };
    match find(state, &v, tenant, &key).await {
        Ok(Some(f)) => {
            let now = state.api.store.now_ms();
            (
                StatusCode::OK,
                detail_html(
                    &f,
                    &key,
                    &state.api.catalog,
                    now,
                    notice,
                    &FormTokens {
                        session: super::csrf_token(headers),
                        visit: form_token.to_owned(),
                    },
                    l,
                ),
            )
        }
        Ok(None) => (StatusCode::NOT_FOUND, not_found(key.as_str(), l)),
        Err(e) if e.status() == StatusCode::FORBIDDEN => (
            StatusCode::FORBIDDEN,
            message(
                tr(
                    l,
                    "Este token vê só o próprio tenant.",
                    "This token sees only its own tenant.",
                ),
                l,
            ),
        ),
        Err(e) if e.status() == StatusCode::UNPROCESSABLE_ENTITY => (
            StatusCode::UNPROCESSABLE_ENTITY,
            message(tr(l, "Tenant inválido.", "Invalid tenant."), l),
        ),
        Err(e) => (e.status(), unavailable(l)),
    }
}

fn message(text: &str, l: Locale) -> String {
    html! {
        h1 { (tr(l, "Ação", "Action")) }
        p class="field-error" role="alert" { (text) }
        p { a href={ "/live?lang=" (l.tag()) } rel="external" { (tr(l, "Voltar ao monitor", "Back to the monitor")) } }
    }
    .into_string()
}

fn unavailable(l: Locale) -> String {
    message(
        tr(
            l,
            "Não foi possível ler a ação agora; tente de novo em instantes.",
            "The action cannot be read right now; try again in a moment.",
        ),
        l,
    )
}

fn not_found(key: &str, l: Locale) -> String {
    html! {
        h1 { (tr(l, "Ação não encontrada", "Action not found")) }
        p class="field-error" role="alert" {
            (tr(l, "Nenhuma ação que você pode ver tem a chave", "No action you may see has the key")) " "
            code { (key) } ". "
            (tr(l, "A retenção remove ações resolvidas depois do prazo do tenant.", "Retention removes settled actions after the tenant's period."))
        }
        p { a href={ "/live?lang=" (l.tag()) } rel="external" { (tr(l, "Voltar ao monitor", "Back to the monitor")) } }
    }
    .into_string()
}

fn moment(ms: i64) -> Markup {
    let utc = utc_second(ms);
    html! { time datetime=(iso_utc(ms)) title=(utc) data-local="" { (utc) } }
}

fn state_text(a: &Action, now: i64, l: Locale) -> &'static str {
    match a.state {
        _ if uncertain_now(a, now) => tr(
            l,
            "incerta: resultado desconhecido",
            "uncertain: outcome unknown",
        ),
        ActionState::Started => tr(l, "em andamento", "in flight"),
        ActionState::Completed if a.reconciled => {
            tr(l, "concluída (reconciliada)", "completed (reconciled)")
        }
        ActionState::Completed => tr(l, "concluída", "completed"),
        ActionState::Failed if a.reconciled => {
            tr(l, "falhou (reconciliada)", "failed (reconciled)")
        }
        ActionState::Failed if a.retryable == Some(true) => {
            tr(l, "falhou, pode repetir", "failed, may be retried")
        }
        ActionState::Failed => tr(l, "falhou de vez", "failed for good"),
        ActionState::Uncertain => tr(l, "incerta", "uncertain"),
    }
}

fn ended_text(ended: AttemptEnd, l: Locale) -> &'static str {
    match ended {
        AttemptEnd::Failed => tr(l, "falhou (podia repetir)", "failed (retryable)"),
        AttemptEnd::Expired => tr(
            l,
            "lease expirou; outra tentativa assumiu",
            "lease ran out; another attempt took over",
        ),
        AttemptEnd::Swept => tr(
            l,
            "lease expirou; marcada incerta pela varredura",
            "lease ran out; marked uncertain by the sweep",
        ),
        AttemptEnd::Uncertain => tr(
            l,
            "assumiu uma ação incerta e a lease expirou",
            "took over an uncertain action and its lease ran out",
        ),
    }
}

fn notice_html(notice: Option<&str>, l: Locale) -> Markup {
    let (ok, text) = match notice {
        None => return html! {},
        Some("reconciled") => (true, tr(l, "Resultado registrado: a ação está reconciliada.", "Outcome recorded: the action is reconciled.")),
        Some("superseded") => (true, tr(l, "Intenção substituída: a ação que falhou está selada, e a intenção roda com uma chave nova (veja abaixo).", "Intent superseded: the failed action is sealed, and the intent runs under a new key (see below).")),
        Some("reason") => (false, tr(l, "Nada foi substituído: diga por quê (de 1 a 1000 caracteres).", "Nothing was superseded: say why (1 to 1000 characters).")),
        Some("candidate") => (false, tr(l, "Nada foi substituído: o candidato corrigido precisa ser um objeto JSON válido, com a referência da própria intenção, e sem membros que começam com _idem.", "Nothing was superseded: the corrected candidate must be a valid JSON object, with the intent's own reference, and no member starting with _idem.")),
        Some("not_failed") => (false, tr(l, "Nada foi substituído: a ação não está mais em falha (outra tentativa a assumiu ou resolveu).", "Nothing was superseded: the action is no longer failed (another attempt took it over or settled it).")),
        Some("stale") => (false, tr(l, "Nada foi registrado: outra tentativa assumiu ou resolveu a ação depois que esta página abriu. Veja o estado abaixo.", "Nothing was recorded: another attempt took over or settled the action after this page opened. See its state below.")),
        Some("response") => (false, tr(l, "Nada foi registrado: «concluída» precisa da resposta do provedor em JSON válido (até o limite de resultado do servidor, --max-outcome-bytes, 1 MiB por padrão, e 64 níveis de aninhamento).", "Nothing was recorded: «completed» needs the provider's response as valid JSON (up to the server's outcome bound, --max-outcome-bytes, 1 MiB by default, and 64 levels of nesting).")),
        Some("retryable") => (false, tr(l, "Nada foi registrado: «pode ser repetida» aceita só true ou false.", "Nothing was recorded: «may be retried» takes only true or false.")),
        Some("error") => (false, tr(l, "Nada foi registrado: «falhou» precisa do erro que o provedor informou (até o limite de resultado do servidor, 1 MiB por padrão).", "Nothing was recorded: «failed» needs the error the provider reported (up to the server's outcome bound, 1 MiB by default).")),
        Some("outcome") => (false, tr(l, "Nada foi registrado: escolha o que o provedor disse que aconteceu.", "Nothing was recorded: choose what the provider says happened.")),
        Some(_) => (false, tr(l, "Nada foi registrado.", "Nothing was recorded.")),
    };
    html! {
        p id="action-notice" class=(if ok { "notice ok" } else { "field-error" }) role=(if ok { "status" } else { "alert" }) { (text) }
    }
}

fn detail_html(
    f: &Found,
    key: &IdempotencyKey,
    catalog: &idem_core::Catalog,
    now: i64,
    notice: Option<&str>,
    tokens: &FormTokens,
    l: Locale,
) -> String {
    let a = &f.action;
    let unknown = uncertain_now(a, now);
    let scope = export_query(Some(f.tenant.as_str()), l);
    let facts = f
        .intent
        .as_ref()
        .map(|(_, action, i)| IntentFacts::read(catalog, action, &i.payload.to_json()))
        .unwrap_or_default();
    // Attempts before this history was kept are counted but not listed.
    let listed = i32::try_from(f.attempts.len()).unwrap_or(i32::MAX);
    let unlisted = (a.attempts - 1 - listed).max(0);
    html! {
        p class="note" { a href={ "/live?" (scope) } rel="external" { "← " (tr(l, "Monitor ao vivo", "Live monitor")) } }
        h1 id="action-title" { (tr(l, "Ação", "Action")) " " (a.action) }
        (notice_html(notice, l))
        p id="action-key" { (tr(l, "Chave", "Key")) ": " code { (key.as_str()) } " " (copy_button(key.as_str(), tr(l, "Copiar a chave", "Copy the key"), l)) }
        dl class="facts" id="action-facts" {
            dt { (tr(l, "Estado", "State")) } dd id="action-state" class=(if unknown { "alert" } else { "" }) { (state_text(a, now, l)) }
            dt { "Tenant" } dd { (f.tenant.as_str()) }
            dt { (tr(l, "Tentativas", "Attempts")) } dd id="action-attempts" { (a.attempts) }
            dt { (tr(l, "Token atual", "Current token")) } dd { (a.token) }
            dt { (tr(l, "Tentativa atual começou", "Current attempt started")) } dd { (moment(a.started_ms)) " (" (tr(l, "há", "")) " " (duration((now - a.started_ms).max(0), l)) (tr(l, "", " ago")) ")" }
            dt { (tr(l, "Lease", "Lease")) } dd id="action-lease" { @if let Some(t) = a.lease_until_ms { (if t <= now { tr(l, "terminou em", "ended at") } else { tr(l, "termina em", "ends at") }) " " (moment(t)) } @else { "—" } }
            @if let Some(t) = a.swept_ms { dt { (tr(l, "Marcada incerta", "Marked uncertain")) } dd { (moment(t)) " " (tr(l, "(varredura)", "(sweep)")) } }
            dt { (tr(l, "Última mudança", "Last change")) } dd { (moment(a.updated_ms)) }
            @if let Some(r) = &a.response { dt { (tr(l, "Resposta", "Response")) } dd { pre { (r) } } }
            @if let Some(e) = &a.error { dt { (tr(l, "Erro", "Error")) } dd { pre { (reveal_bidi(e)) } } }
        }
        h2 { (tr(l, "Intenção", "Intent")) }
        @match &f.intent {
            Some((reference, action, i)) => {
                dl class="facts" id="action-intent" {
                    dt { (tr(l, "Referência", "Reference")) } dd id="intent-reference" { (reveal_bidi(reference)) " " (copy_button(reference, tr(l, "Copiar a referência", "Copy the reference"), l)) }
                    dt { (tr(l, "Valor", "Amount")) } dd id="intent-amount" { @if let Some(v) = facts.amount { (IntentFacts::amount_text(v, facts.currency, l)) } @else { "—" } }
                    dt { (tr(l, "Cliente", "Customer")) } dd id="intent-customer" { @if let Some(c) = &facts.customer { (reveal_bidi(c)) " " (copy_button(c, tr(l, "Copiar o cliente", "Copy the customer"), l)) } @else { "—" } }
                    dt { (tr(l, "Ação", "Action")) } dd { (action) }
                    dt { (tr(l, "Regras", "Rules")) } dd { "v" (i.rules_version) ", " (tr(l, "revisão", "revision")) " " (i.revision) }
                    dt { (tr(l, "Entregas", "Deliveries")) } dd { (i.deliveries) }
                    dt { (tr(l, "Primeira / última", "First / last")) } dd { (moment(i.first_seen_ms)) " / " (moment(i.last_seen_ms)) }
                }
                h3 { (tr(l, "Payload congelado", "Frozen payload")) }
                pre id="intent-payload" class="payload" { (reveal_bidi(&pretty(&i.payload.to_json()))) }
                @if let Some(meta) = frozen_meta(i.candidate.as_deref()) {
                    h3 { (tr(l, "_meta congelado (enviado em toda repetição)", "Frozen _meta (sent with every forward)")) }
                    pre id="intent-meta" class="payload" { (reveal_bidi(&meta)) }
                }
            }
            None => p class="note" id="intent-missing" { (tr(l,
                "Nenhuma intenção guardada tem esta chave: a retenção a removeu, ou a chave foi derivada sem registrar a intenção.",
                "No kept intent has this key: retention removed it, or the key was derived without recording the intent.")) }
        }
        h2 { (tr(l, "Tentativas", "Attempts")) }
        @if unlisted > 0 {
            p class="note" { (tr(l, "Tentativas anteriores ao histórico (não listadas):", "Attempts from before the history was kept (not listed):")) " " (unlisted) "." }
        }
        (crate::markup::scrolling(tr(l, "Tabela: tentativas", "Table: attempts"), l, html! {
            table id="action-attempt-list" {
                thead { tr {
                    th scope="col" { "#" }
                    th scope="col" { "Token" }
                    th scope="col" { (tr(l, "Início", "Started")) }
                    th scope="col" { (tr(l, "Lease até", "Lease until")) }
                    th scope="col" { (tr(l, "Como terminou", "How it ended")) }
                    th scope="col" { (tr(l, "Substituída em", "Replaced at")) }
                } }
                tbody {
                    @for t in &f.attempts {
                        tr data-ended=(t.ended.as_str()) {
                            td class="num" { (t.attempt) }
                            td class="num" { (t.token) }
                            td { (moment(t.started_ms)) }
                            td { @if let Some(x) = t.lease_until_ms { (moment(x)) } @else { "—" } }
                            td { (ended_text(t.ended, l)) @if let Some(e) = &t.error { ": " code { (reveal_bidi(e)) } } }
                            td { (moment(t.replaced_ms)) }
                        }
                    }
                    tr data-ended="current" class="current" {
                        td class="num" { (a.attempts) }
                        td class="num" { (a.token) }
                        td { (moment(a.started_ms)) }
                        td { @if let Some(x) = a.lease_until_ms { (moment(x)) } @else { "—" } }
                        td { (tr(l, "atual:", "current:")) " " (state_text(a, now, l)) }
                        td { "—" }
                    }
                }
            }
        }))
        @if unknown {
            (reconcile_form(key, f.tenant.as_str(), a.token, tokens, &hint(f, key, l), l))
        }
        @if !f.filed.is_empty() {
            section id="action-superseded" {
                h2 { (tr(l, "Substituída", "Superseded")) }
                @for (filed, now) in &f.filed {
                    p {
                        (tr(l, "A revisão", "Revision")) " " (filed.revision) " "
                        (tr(l, "desta intenção tinha esta chave; substituída em", "of this intent had this key; replaced at")) " "
                        (moment(filed.replaced_ms)) ": " (reveal_bidi(&filed.reason)) ". "
                        @if let Some(k) = now {
                            (tr(l, "A intenção agora tem a chave", "The intent now has the key")) " "
                            a href={ "/live/actions/" (k.as_str()) "?" (scope) } rel="external" { code { (k.as_str()) } } "."
                        }
                    }
                }
            }
        }
        @if a.state == ActionState::Failed && f.intent.as_ref().is_some_and(|(_, _, i)| i.key == *key) {
            (supersede_form(key, f.tenant.as_str(), tokens, l))
        }
        script src="/live.js" defer {}
    }
    .into_string()
}

/// The canonical JSON, indented for reading (as stored when it is not JSON).
fn pretty(json: &str) -> String {
    serde_json::from_str::<serde_json::Value>(json)
        .and_then(|v| serde_json::to_string_pretty(&v))
        .unwrap_or_else(|_| json.to_owned())
}

/// The `_meta` entries the MCP gateway froze with the intent (a payment's
/// authorization: what a person checks with the provider), indented.
fn frozen_meta(candidate: Option<&str>) -> Option<String> {
    let c: serde_json::Value = serde_json::from_str(candidate?).ok()?;
    let meta = c.get(idem_mcp::guarded::META_MEMBER)?;
    serde_json::to_string_pretty(meta).ok()
}

/// What to ask the provider, in its protocol's own words: an x402 payment
/// is checked by its authorization's nonce on the chain; a call through the
/// MCP gateway by the record the tool keeps; anything else by the key it
/// received as Idempotency-Key.
fn hint(f: &Found, key: &IdempotencyKey, l: Locale) -> String {
    let candidate: Option<serde_json::Value> = f
        .intent
        .as_ref()
        .and_then(|(_, _, i)| i.candidate.as_deref())
        .and_then(|c| serde_json::from_str(c).ok());
    let x402 = candidate
        .as_ref()
        .and_then(|c| c.pointer("/_idem_mcp_meta/x402~1payment"));
    if let Some(p) = x402 {
        let at = |ptr: &str| {
            p.pointer(ptr)
                .and_then(serde_json::Value::as_str)
                .unwrap_or("?")
                .to_owned()
        };
        let (nonce, from, network) = (
            at("/payload/authorization/nonce"),
            at("/payload/authorization/from"),
            at("/accepted/network"),
        );
        return match l {
            Locale::PtBr => format!("x402: pergunte ao facilitador, ou veja na rede {network}, se a autorização de nonce {nonce} do pagador {from} foi liquidada (transferWithAuthorization). Liquidada: executou, com o recibo como resposta. Não liquidada e já expirada: não executou. O registro vale só para a tentativa atual: se outra assumir antes, nada é gravado."),
            _ => format!("x402: ask the facilitator, or look on {network}, whether the authorization with nonce {nonce} from payer {from} was settled (transferWithAuthorization). Settled: it executed, the receipt is the response. Not settled and expired: it did not. The record holds only for the current attempt: if another takes over first, nothing is written."),
        };
    }
    if candidate
        .as_ref()
        .is_some_and(|c| c.get(idem_mcp::guarded::ARGUMENTS_MEMBER).is_some())
    {
        return match l {
            Locale::PtBr => format!("Chamada pelo gateway MCP: pergunte ao provedor pelo registro da ferramenta (pela referência, ou pela chave {key}, que o gateway enviou no argumento de chave da ferramenta) e registre o que aconteceu. O registro vale só para a tentativa atual: se outra assumir antes, nada é gravado."),
            _ => format!("Called through the MCP gateway: ask the provider for the tool's record (by the reference, or by the key {key}, which the gateway sent in the tool's key argument) and record what happened. The record holds only for the current attempt: if another takes over first, nothing is written."),
        };
    }
    tr(l,
        "Pergunte ao provedor (pela referência ou pela chave, que ele recebeu como Idempotency-Key) e registre o que aconteceu. O registro vale só para a tentativa atual: se outra assumir antes, nada é gravado.",
        "Ask the provider (by the reference, or by the key it received as Idempotency-Key) and record what happened. The record holds only for the current attempt: if another takes over first, nothing is written.").to_owned()
}

fn reconcile_form(
    key: &IdempotencyKey,
    tenant: &str,
    token: i64,
    tokens: &FormTokens,
    hint: &str,
    l: Locale,
) -> Markup {
    html! {
        section id="reconcile" class="reconcile" {
            h2 { (tr(l, "Reconciliar", "Reconcile")) }
            p class="note" id="reconcile-hint" { (reveal_bidi(hint)) }
            form method="post" action={ "/live/actions/" (key.as_str()) "/reconcile" } id="reconcile-form" {
                input type="hidden" name="token" value=(token);
                @if let Some(c) = &tokens.session { input type="hidden" name="csrf" value=(c); }
                input type="hidden" name=(app::FORM_FIELD) value=(tokens.visit);
                input type="hidden" name="tenant" value=(tenant);
                input type="hidden" name="lang" value=(l.tag());
                fieldset {
                    legend { (tr(l, "O que o provedor diz", "What the provider says")) }
                    label { input type="radio" name="outcome" value="completed" required; " " (tr(l, "Executou (concluída)", "It executed (completed)")) }
                    label { input type="radio" name="outcome" value="failed"; " " (tr(l, "Não executou (falhou)", "It did not (failed)")) }
                }
                label for="reconcile-response" { (tr(l, "Resposta do provedor (JSON), se executou", "The provider's response (JSON), if it executed")) }
                textarea id="reconcile-response" name="response" rows="4" placeholder="{\"charge_id\": \"ch_…\"}" {}
                label for="reconcile-error" { (tr(l, "Erro do provedor, se não executou", "The provider's error, if it did not")) }
                input id="reconcile-error" name="error" type="text";
                label { input type="checkbox" name="retryable" value="true"; " " (tr(l, "Pode ser repetida (a próxima tentativa executa de novo)", "May be retried (the next attempt runs again)")) }
                button type="submit" { (tr(l, "Registrar", "Record")) }
            }
        }
    }
}

/// A way out of a wrong first attempt: the intent of a failed action (the
/// provider refused it, nothing executed) gets a corrected candidate, or
/// releases its own for the next delivery, under a key of its own.
fn supersede_form(key: &IdempotencyKey, tenant: &str, tokens: &FormTokens, l: Locale) -> Markup {
    html! {
        section id="supersede" class="reconcile" {
            h2 { (tr(l, "Substituir a intenção", "Supersede the intent")) }
            p class="note" { (tr(l,
                "A ação falhou: nada foi executado. Se o primeiro pedido estava errado (um total que o provedor recusou, uma autorização que expirou), a intenção pode rodar de novo com uma chave nova: esta ação fica selada, e a versão antiga fica no histórico com o motivo. Sem candidato, a próxima entrega congela o seu (um pagamento assinado de novo).",
                "The action failed: nothing executed. If the first request was wrong (a total the provider refused, an authorization that expired), the intent can run again under a new key: this action is sealed, and the old version stays in the history with the reason. With no candidate, the next delivery's is frozen (a payment signed anew).")) }
            form method="post" action={ "/live/actions/" (key.as_str()) "/supersede" } id="supersede-form" {
                @if let Some(c) = &tokens.session { input type="hidden" name="csrf" value=(c); }
                input type="hidden" name=(app::FORM_FIELD) value=(tokens.visit);
                input type="hidden" name="tenant" value=(tenant);
                input type="hidden" name="lang" value=(l.tag());
                label for="supersede-reason" { (tr(l, "Por quê (fica no histórico)", "Why (kept in the history)")) }
                input id="supersede-reason" name="reason" type="text" required maxlength="1000";
                label for="supersede-candidate" { (tr(l, "Candidato corrigido (JSON), ou vazio para liberar", "Corrected candidate (JSON), or empty to release")) }
                textarea id="supersede-candidate" name="candidate" rows="4" {}
                button type="submit" { (tr(l, "Substituir", "Supersede")) }
            }
        }
    }
}

/// The supersede form's fields.
#[derive(Debug, serde::Deserialize)]
pub struct SupersedeForm {
    /// Why.
    #[serde(default)]
    pub reason: String,
    /// The corrected candidate (JSON), or empty.
    #[serde(default)]
    pub candidate: String,
    /// The tenant the page showed.
    #[serde(default)]
    pub tenant: String,
    /// The page's language.
    #[serde(default)]
    pub lang: String,
    /// The login session's form token.
    #[serde(default)]
    pub csrf: Option<String>,
    /// The visit's form token.
    #[serde(default)]
    pub form_token: Option<String>,
}

/// `POST /live/actions/{key}/supersede`: the page's form; the store's
/// `supersede_intent`, as `/v1` and idem's MCP server call it, with the
/// viewer as who. Back to the old key's page, which says what happened and
/// links the new one.
pub async fn supersede(
    State(state): State<LiveState>,
    headers: HeaderMap,
    Path(raw): Path<String>,
    Form(form): Form<SupersedeForm>,
) -> Result<Response, ApiError> {
    let p = posted(
        &state,
        &headers,
        &raw,
        &form.csrf,
        &form.form_token,
        &form.tenant,
        &form.lang,
        "supersede",
    )
    .await?;
    let (found, v) = (&p.found, &p.viewer);
    let back = |what: &str| p.back("superseded", what);
    let Some((reference, action, intent)) = &found.intent else {
        return Ok(back("not_failed"));
    };
    if intent.key != p.key {
        return Ok(back("not_failed"));
    }
    let reason = form.reason.trim();
    if reason.is_empty() || reason.chars().count() > 1000 {
        return Ok(back("reason"));
    }
    let text = form.candidate.trim();
    let candidate = if text.is_empty() {
        None
    } else {
        let ok = text.len() <= state.api.max_outcome_bytes
            && idem_core::json::check_depth(text.as_bytes(), idem_core::json::MAX_DEPTH).is_ok()
            && serde_json::from_str::<serde_json::Map<String, serde_json::Value>>(text)
                .is_ok_and(|m| !m.keys().any(|k| k.starts_with("_idem")));
        match idem_core::Payload::from_json(text) {
            Ok(p) if ok => Some(p),
            _ => return Ok(back("candidate")),
        }
    };
    let who = match &v {
        Viewer::Admin => "the admin (/live)".to_owned(),
        Viewer::Tenant(t) => format!("tenant {} (/live)", t.as_str()),
    };
    match state
        .api
        .store
        .supersede_intent(
            &found.tenant,
            action,
            reference,
            candidate.as_ref(),
            &who,
            reason,
        )
        .await
    {
        Ok(done) => {
            tracing::info!(tenant = %found.tenant, old = %done.previous_key, new = %done.intent.key, "intent superseded from the live monitor");
            Ok(back("superseded"))
        }
        Err(idem_store::Error::NotSupersedable(_)) => Ok(back("not_failed")),
        Err(idem_store::Error::Invalid(_)) => Ok(back("candidate")),
        Err(e) => Err(e.into()),
    }
}

/// What both forms of an action's page start from, once the post passed
/// the cross-site checks and the monitor's access: the action as the viewer
/// may see it, the page's language, and the way back to its page.
struct Posted {
    found: Found,
    key: IdempotencyKey,
    l: Locale,
    viewer: Viewer,
}

/// The checks every form post of an action's page passes first: the
/// same origin, the form tokens, the viewer's access, the key, the action.
#[allow(clippy::too_many_arguments)] // the form's own fields, by name
async fn posted(
    state: &LiveState,
    headers: &HeaderMap,
    raw: &str,
    csrf: &Option<String>,
    form_token: &Option<String>,
    tenant: &str,
    lang: &str,
    what: &'static str,
) -> Result<Posted, ApiError> {
    if !idem_api::boundary::same_origin(headers)
        || !super::csrf_ok(headers, csrf.as_deref())
        || !crate::http::forms::form_token_ok(headers, form_token.as_deref())
    {
        return Err(crate::http::forms::cross_site(what));
    }
    let viewer = authorized(state, headers).await?;
    let key =
        IdempotencyKey::try_from(raw).map_err(|_| ApiError::not_found("no action has this key"))?;
    let l = Locale::from_tag(lang).unwrap_or_default();
    let tenant = (!tenant.is_empty()).then_some(tenant);
    let Some(found) = find(state, &viewer, tenant, &key).await? else {
        return Err(ApiError::not_found("no action you may see has this key"));
    };
    Ok(Posted {
        found,
        key,
        l,
        viewer,
    })
}

impl Posted {
    /// 303 to the action's page, saying `what`: `done=what` when it is
    /// `done`, else `error=what`.
    fn back(&self, done: &str, what: &str) -> Response {
        let mut q = form_urlencoded::Serializer::new(String::new());
        q.append_pair("tenant", self.found.tenant.as_str());
        q.append_pair("lang", self.l.tag());
        q.append_pair(if what == done { "done" } else { "error" }, what);
        Redirect::to(&format!(
            "/live/actions/{}?{}",
            self.key.as_str(),
            q.finish()
        ))
        .into_response()
    }
}

/// The form tokens a page's reconcile form carries: the login session's
/// (when the visitor signed in) and the visit's (always).
struct FormTokens {
    session: Option<String>,
    visit: String,
}

/// The reconcile form's fields.
#[derive(Debug, serde::Deserialize)]
pub struct ReconcileForm {
    /// The fencing token the page showed.
    pub token: i64,
    /// `completed` or `failed`.
    #[serde(default)]
    pub outcome: String,
    /// The provider's response (JSON), for `completed`.
    #[serde(default)]
    pub response: String,
    /// The provider's error, for `failed`.
    #[serde(default)]
    pub error: String,
    /// Whether a failure may be retried.
    #[serde(default)]
    pub retryable: Option<String>,
    /// The tenant the page showed.
    #[serde(default)]
    pub tenant: String,
    /// The page's language.
    #[serde(default)]
    pub lang: String,
    /// The login session's form token (see `csrf_token`).
    #[serde(default)]
    pub csrf: Option<String>,
    /// The visit's form token (see `guard::form_token_ok`).
    #[serde(default)]
    pub form_token: Option<String>,
}

/// `POST /live/actions/{key}/reconcile`: the page's form. Records the
/// outcome through the store's `reconcile` (the same operation, fencing
/// check included, as `POST /v1/actions/{key}/reconcile`), then sends the
/// browser back to the action's page (303), which says what happened.
pub async fn reconcile(
    State(state): State<LiveState>,
    headers: HeaderMap,
    Path(raw): Path<String>,
    Form(form): Form<ReconcileForm>,
) -> Result<Response, ApiError> {
    let p = posted(
        &state,
        &headers,
        &raw,
        &form.csrf,
        &form.form_token,
        &form.tenant,
        &form.lang,
        "reconcile",
    )
    .await?;
    let (found, key) = (&p.found, &p.key);
    let back = |what: &str| p.back("reconciled", what);
    let outcome = match form.outcome.as_str() {
        "completed" => {
            let r = form.response.trim();
            let shallow =
                idem_core::json::check_depth(r.as_bytes(), idem_core::json::MAX_DEPTH).is_ok();
            match serde_json::from_str::<Box<serde_json::value::RawValue>>(r) {
                Ok(raw) if r.len() <= state.api.max_outcome_bytes && shallow => {
                    Outcome::Completed(raw.get().to_owned())
                }
                _ => return Ok(back("response")),
            }
        }
        "failed" => {
            let e = form.error.trim();
            if e.is_empty() || e.len() > state.api.max_outcome_bytes {
                return Ok(back("error"));
            }
            // A checkbox sends its value only when ticked; a script may send
            // `false`. Anything else is refused, never read as a yes.
            let retryable = match form.retryable.as_deref().map(str::trim) {
                None | Some("" | "false" | "off" | "0") => false,
                Some("true" | "on" | "1") => true,
                Some(_) => return Ok(back("retryable")),
            };
            Outcome::Failed {
                error: e.to_owned(),
                retryable,
            }
        }
        _ => return Ok(back("outcome")),
    };
    let mut s = state.api.store.session().await?;
    match s.reconcile(&found.tenant, key, form.token, &outcome).await {
        Ok(()) => {
            tracing::info!(tenant = %found.tenant, "action reconciled from the live monitor");
            Ok(back("reconciled"))
        }
        Err(idem_store::Error::StaleToken { .. }) => Ok(back("stale")),
        Err(e) => Err(e.into()),
    }
}

/// What an export covers: the tenants the viewer may see, in the
/// viewer's language, and whose export slot it takes (the tenant's, or
/// `*` for an admin's export of every tenant).
async fn export_scope(
    state: &LiveState,
    headers: &HeaderMap,
    pairs: Result<Query<Vec<(String, String)>>, axum::extract::rejection::QueryRejection>,
) -> Result<(Vec<TenantId>, Locale, String), ApiError> {
    let q = super::query_of(pairs, headers)?;
    let v = authorized(state, headers).await?;
    let (tenants, holder) = match (&v, &q.tenant) {
        (Viewer::Admin, None) => (every_tenant(state).await?, "*".to_owned()),
        _ => {
            let tenants = scope(state, &v, &q).await?;
            let holder = tenants
                .iter()
                .map(TenantId::as_str)
                .collect::<Vec<_>>()
                .join(",");
            (tenants, holder)
        }
    };
    Ok((tenants, q.locale, holder))
}

/// The formats an export is written in.
#[derive(Debug, Clone, Copy)]
enum Format {
    Json,
    Csv(Locale),
}

/// Rows written per chunk of an export's body.
const ROWS_PER_CHUNK: usize = 256;

/// Starts an export: the rows are read tenant by tenant and written in
/// chunks through a channel of two, so an export holds one tenant's rows
/// and two chunks at a time however long the list is, and stops reading
/// when its client stops reading. Takes its tenant's one export slot and
/// one of the slots every viewer shares, or answers 503.
fn export_body(
    state: &LiveState,
    tenants: Vec<TenantId>,
    holder: String,
    format: Format,
) -> Result<axum::body::Body, ApiError> {
    let Some(mine) = ExportHolder::take(&state.exporting, holder) else {
        return Err(ApiError::exports_busy(1)
            .detail("an export of this tenant's uncertain list is running already; retry after Retry-After seconds"));
    };
    let Ok(slot) = state.exports.clone().try_acquire_owned() else {
        return Err(ApiError::exports_busy(EXPORTS_AT_ONCE));
    };
    let (tx, rx) = tokio::sync::mpsc::channel::<Result<axum::body::Bytes, std::io::Error>>(2);
    let store = state.api.store.clone();
    let catalog = state.api.catalog.clone();
    tokio::spawn(async move {
        let _slot = slot;
        let _mine = mine;
        let r = write_export(&store, &catalog, tenants, format, &tx).await;
        if r.is_err() {
            // The body ends with an error rather than looking complete (the
            // cause was logged where it became an ApiError).
            tracing::warn!("an uncertain-list export stopped");
            let _ = tx
                .send(Err(std::io::Error::other("the export stopped")))
                .await;
        }
    });
    // Fused: a compression layer polls once more after the end (gzip and
    // br writing their trailer), and an unfused unfold panics there.
    let chunks =
        futures_util::StreamExt::fuse(futures_util::stream::unfold(rx, |mut rx| async move {
            rx.recv().await.map(|c| (c, rx))
        }));
    Ok(axum::body::Body::from_stream(chunks))
}

/// One tenant's (or the admin's) export running, in
/// [`LiveState::exporting`] until dropped.
struct ExportHolder {
    set: std::sync::Arc<std::sync::Mutex<std::collections::HashSet<String>>>,
    who: String,
}

impl ExportHolder {
    fn take(
        set: &std::sync::Arc<std::sync::Mutex<std::collections::HashSet<String>>>,
        who: String,
    ) -> Option<Self> {
        let fresh = set
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(who.clone());
        fresh.then(|| Self {
            set: set.clone(),
            who,
        })
    }
}

impl Drop for ExportHolder {
    fn drop(&mut self) {
        self.set
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&self.who);
    }
}

/// Writes the export into `tx`; `Ok` also when the client went away.
async fn write_export(
    store: &idem_store::Store,
    catalog: &idem_core::Catalog,
    tenants: Vec<TenantId>,
    format: Format,
    tx: &tokio::sync::mpsc::Sender<Result<axum::body::Bytes, std::io::Error>>,
) -> Result<(), ApiError> {
    let send = |bytes: Vec<u8>| async move { tx.send(Ok(bytes.into())).await.is_ok() };
    let head = match format {
        Format::Json => b"[".to_vec(),
        Format::Csv(l) => uncertain_csv_text(&[], l).map_err(csv_failed)?,
    };
    if !send(head).await {
        return Ok(());
    }
    let now = store.now_ms();
    let mut left = EXPORT_MAX;
    let mut first = true;
    for t in tenants {
        if left == 0 {
            break;
        }
        let mut rows: Vec<LiveUncertain> = {
            let mut s = store.session().await?;
            s.live_actions(&t, now, left)
                .await?
                .uncertain_keys
                .into_iter()
                .map(|u| LiveUncertain::new(t.as_str(), u, catalog, now))
                .collect()
        };
        rows.sort_by_key(|u| std::cmp::Reverse(u.lease_until_ms.unwrap_or(u.started_ms)));
        left = left.saturating_sub(u32::try_from(rows.len()).unwrap_or(u32::MAX));
        for chunk in rows.chunks(ROWS_PER_CHUNK) {
            let bytes = match format {
                Format::Json => {
                    let mut out = Vec::new();
                    for u in chunk {
                        if !first {
                            out.push(b',');
                        }
                        first = false;
                        serde_json::to_writer(&mut out, u).map_err(|e| {
                            tracing::error!(error = %e, "cannot write the uncertain list");
                            ApiError::internal()
                        })?;
                    }
                    out
                }
                Format::Csv(l) => uncertain_csv_rows(chunk, l).map_err(csv_failed)?,
            };
            if !send(bytes).await {
                return Ok(());
            }
        }
    }
    if let Format::Json = format {
        send(b"]".to_vec()).await;
    }
    Ok(())
}

fn csv_failed(e: csv::Error) -> ApiError {
    tracing::error!(error = %e, "cannot write the uncertain list");
    ApiError::internal()
}

/// `GET /live/uncertain.json`: the uncertain list as a JSON array (the
/// same objects as `uncertain_keys` in `/live/data.json`), tenant by
/// tenant, newest first within each, at most [`EXPORT_MAX`] in all.
pub async fn uncertain_json(
    State(state): State<LiveState>,
    headers: HeaderMap,
    pairs: Result<Query<Vec<(String, String)>>, axum::extract::rejection::QueryRejection>,
) -> Result<Response, ApiError> {
    let (tenants, _, holder) = export_scope(&state, &headers, pairs).await?;
    let body = export_body(&state, tenants, holder, Format::Json)?;
    Ok((
        [
            (
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            ),
            (header::CACHE_CONTROL, HeaderValue::from_static("no-store")),
        ],
        body,
    )
        .into_response())
}

/// `GET /live/uncertain.csv`: the uncertain list in the page's locale's
/// dialect (pt-BR: `;`, decimal comma in `amount_formatted`, UTF-8 BOM;
/// English: `,`). `amount` and the times stay locale-free. Rows as in
/// [`uncertain_json`].
pub async fn uncertain_csv(
    State(state): State<LiveState>,
    headers: HeaderMap,
    pairs: Result<Query<Vec<(String, String)>>, axum::extract::rejection::QueryRejection>,
) -> Result<Response, ApiError> {
    let (tenants, l, holder) = export_scope(&state, &headers, pairs).await?;
    let body = export_body(&state, tenants, holder, Format::Csv(l))?;
    let day: String = utc_second(state.api.store.now_ms())
        .chars()
        .take(10)
        .collect();
    let disposition = format!("attachment; filename=\"idem-uncertain-{day}.csv\"");
    Ok((
        [
            (
                header::CONTENT_TYPE,
                HeaderValue::from_static("text/csv; charset=utf-8"),
            ),
            (header::CACHE_CONTROL, HeaderValue::from_static("no-store")),
            (
                header::CONTENT_DISPOSITION,
                HeaderValue::from_str(&disposition)
                    .unwrap_or_else(|_| HeaderValue::from_static("attachment")),
            ),
        ],
        body,
    )
        .into_response())
}

/// The CSV text: one header, one row per uncertain action (pt-BR with
/// the byte-order mark Excel needs to read UTF-8).
pub fn uncertain_csv_text(list: &[LiveUncertain], l: Locale) -> Result<Vec<u8>, csv::Error> {
    let pt = l == Locale::PtBr;
    let mut w = csv_writer(
        l,
        if pt {
            "\u{feff}".as_bytes().to_vec()
        } else {
            Vec::new()
        },
    );
    w.write_record([
        "tenant",
        "key",
        "action",
        "reference",
        "amount",
        "amount_formatted",
        "customer",
        "started_utc",
        "lease_until_utc",
        "age_s",
        "attempts",
    ])?;
    let mut out = w.into_inner().map_err(|e| e.into_error())?;
    out.extend(uncertain_csv_rows(list, l)?);
    Ok(out)
}

fn csv_writer(l: Locale, into: Vec<u8>) -> csv::Writer<Vec<u8>> {
    csv::WriterBuilder::new()
        .delimiter(if l == Locale::PtBr { b';' } else { b',' })
        .from_writer(into)
}

/// Rows of the CSV, without its header.
fn uncertain_csv_rows(list: &[LiveUncertain], l: Locale) -> Result<Vec<u8>, csv::Error> {
    let pt = l == Locale::PtBr;
    let mut w = csv_writer(l, Vec::new());
    for u in list {
        let amount = u.amount.map(|a| a.to_string()).unwrap_or_default();
        let amount = crate::http::sheet::exact_number(&amount, pt);
        let shown = u
            .amount
            .map(|a| IntentFacts::amount_text(a, u.currency, l))
            .unwrap_or_default();
        // Every cell through `sheet::cell`: references, customers and
        // tenant names are whatever the recording service sent.
        w.write_record(crate::http::sheet::record([
            u.tenant.as_str(),
            &u.key,
            &u.action,
            u.reference.as_deref().unwrap_or(""),
            &amount,
            &shown,
            u.customer.as_deref().unwrap_or(""),
            &iso_utc(u.started_ms),
            &u.lease_until_ms.map(iso_utc).unwrap_or_default(),
            &(u.age_ms / 1000).to_string(),
            &u.attempts.to_string(),
        ]))?;
    }
    Ok(w.into_inner().map_err(|e| e.into_error())?)
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_viewer_holds_one_export_at_a_time() {
        let set = std::sync::Arc::default();
        let first = super::ExportHolder::take(&set, "acme".into()).expect("free");
        assert!(super::ExportHolder::take(&set, "acme".into()).is_none());
        let other = super::ExportHolder::take(&set, "globex".into());
        assert!(other.is_some());
        drop(first);
        assert!(super::ExportHolder::take(&set, "acme".into()).is_some());
    }

    use super::*;

    fn row() -> LiveUncertain {
        LiveUncertain {
            tenant: "loja".into(),
            key: "a".repeat(64),
            action: "pix.cobranca".into(),
            started_ms: 1_796_040_309_000,
            lease_until_ms: Some(1_796_040_339_000),
            attempts: 2,
            reference: Some("FAT-1; \"x\"".into()),
            amount: Some(rust_decimal::Decimal::new(657_789, 2)),
            currency: None,
            customer: Some("cli-1".into()),
            age_ms: 90_500,
        }
    }

    #[test]
    fn an_amount_in_minor_units_keeps_its_currency_s_digits() {
        // 12345 fils of a `money_minor` field: 12.345 dinars, never 12.35.
        let catalog = idem_core::Catalog::from_toml(
            r#"
[actions."dinar.charge"]
currency = "BHD"
customer = "cliente"
fields = [{ name = "amount", rule = "money_minor" }, { name = "cliente", rule = "trim" }, { name = "referencia_intencao", rule = "trim" }]
[actions."any.charge"]
currency_field = "currency"
fields = [{ name = "amount", rule = "money_minor" }, { name = "currency", rule = "trim" }, { name = "referencia_intencao", rule = "trim" }]
"#,
        )
        .unwrap();
        let facts = IntentFacts::read(
            &catalog,
            "dinar.charge",
            r#"{"amount":"12345","cliente":"c-1","referencia_intencao":"r"}"#,
        );
        assert_eq!(facts.amount, Some(rust_decimal::Decimal::new(12_345, 3)));
        assert_eq!(facts.currency.map(|c| c.code()), Some("BHD"));
        assert_eq!(facts.customer.as_deref(), Some("c-1"));
        let yen = IntentFacts::read(
            &catalog,
            "any.charge",
            r#"{"amount":"1500","currency":"JPY","referencia_intencao":"r"}"#,
        );
        assert_eq!(yen.amount, Some(rust_decimal::Decimal::new(1500, 0)));
        let mut u = row();
        u.amount = facts.amount;
        u.currency = facts.currency;
        let pt =
            String::from_utf8(uncertain_csv_text(&[u.clone()], Locale::PtBr).unwrap()).unwrap();
        assert!(pt.contains(";12,345;BHD 12,345;"), "{pt}");
        let en = String::from_utf8(uncertain_csv_text(&[u], Locale::EnUs).unwrap()).unwrap();
        assert!(en.contains(",12.345,BHD 12.345,"), "{en}");
        assert_eq!(
            IntentFacts::amount_text(
                rust_decimal::Decimal::new(1500, 0),
                yen.currency,
                Locale::EnUs
            ),
            "¥1,500"
        );
    }

    #[test]
    fn the_csv_follows_the_locale_and_keeps_exact_columns() {
        let pt = String::from_utf8(uncertain_csv_text(&[row()], Locale::PtBr).unwrap()).unwrap();
        assert!(pt.starts_with('\u{feff}'));
        let mut r = csv::ReaderBuilder::new()
            .delimiter(b';')
            .from_reader(pt.trim_start_matches('\u{feff}').as_bytes());
        let head = r.headers().unwrap().clone();
        let rec = r.records().next().unwrap().unwrap();
        let get = |k: &str| rec.get(head.iter().position(|h| h == k).unwrap()).unwrap();
        assert_eq!(get("reference"), "FAT-1; \"x\"");
        // The exact column with the decimal comma a pt-BR sheet reads.
        assert_eq!(get("amount"), "6577,89");
        assert_eq!(
            idem_core::locale::parse_decimal(get("amount"), Locale::PtBr).unwrap(),
            rust_decimal::Decimal::new(657_789, 2)
        );
        assert_eq!(get("amount_formatted"), "6.577,89");
        assert_eq!(get("started_utc"), "2026-11-30T12:05:09Z");
        assert_eq!(get("age_s"), "90");
        let en = String::from_utf8(uncertain_csv_text(&[row()], Locale::EnUs).unwrap()).unwrap();
        assert!(en.starts_with("tenant,key,"));
        assert!(en.contains(",6577.89,\"6,577.89\","), "{en}");
    }

    #[test]
    fn formulas_in_the_csv_are_text_and_numbers_stay_numbers() {
        let mut u = row();
        u.reference = Some("=HYPERLINK(\"http://x\")".into());
        u.customer = Some("@SUM(A1)".into());
        u.tenant = "+loja".into();
        u.amount = Some(rust_decimal::Decimal::new(-5, 0));
        let en = String::from_utf8(uncertain_csv_text(&[u], Locale::EnUs).unwrap()).unwrap();
        let mut r = csv::Reader::from_reader(en.as_bytes());
        let head = r.headers().unwrap().clone();
        let rec = r.records().next().unwrap().unwrap();
        let get = |k: &str| rec.get(head.iter().position(|h| h == k).unwrap()).unwrap();
        assert_eq!(get("reference"), "'=HYPERLINK(\"http://x\")");
        assert_eq!(get("customer"), "'@SUM(A1)");
        assert_eq!(get("tenant"), "'+loja");
        assert_eq!(get("amount"), "-5");
    }
}
