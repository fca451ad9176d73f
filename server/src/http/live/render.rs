//! The live monitor's markup, written with maud: every interpolated value is
//! escaped by the template, so what a tenant wrote (its id, an action name)
//! can never become markup. Server only: the browser receives the markup as
//! inner HTML and `public/live.js` swaps fresh copies in; none of this code
//! is in the wasm.

use super::data::{Counts, DuplicateRate, LiveData, Window, DAY, HOUR, MINUTE};
use crate::figures::{figure_html, Figure};
use crate::markup::scrolling;
use app::charts::{LIVE_HEIGHT, LIVE_NAMES};
use app::i18n::{iso_utc, tr, utc_minute, utc_second};
use idem_core::locale::{format_count, format_decimal, Locale};
use maud::{html, Markup, PreEscaped, Render};
use rust_decimal::Decimal;
use std::hash::{Hash, Hasher};

fn count(n: i64, l: Locale) -> String {
    format_count(Decimal::from(n), l)
}

fn pct(d: Decimal, l: Locale) -> String {
    format!("{}%", format_decimal(d, l, 2, 2))
}

/// A duration for people: "850 ms", "12 s", "3,5 min", "2,0 h", "1,5 d".
pub fn duration(ms: i64, l: Locale) -> String {
    let d = Decimal::from(ms);
    if ms < 1_000 {
        format!("{ms} ms")
    } else if ms < MINUTE {
        format!("{} s", format_decimal(d / Decimal::from(1_000), l, 0, 1))
    } else if ms < HOUR {
        format!("{} min", format_decimal(d / Decimal::from(MINUTE), l, 0, 1))
    } else if ms < DAY {
        format!("{} h", format_decimal(d / Decimal::from(HOUR), l, 0, 1))
    } else {
        format!("{} d", format_decimal(d / Decimal::from(DAY), l, 0, 1))
    }
}

/// One number with its label and a note under it.
fn card(id: &str, label: &str, value: &str, note: &str, class: &str) -> Markup {
    html! {
        div class={ "live-card " (class) } id=(id) {
            span class="label" { (label) }
            output class="value" { (value) }
            span class="note" { (note) }
        }
    }
}

/// An instant: UTC to the second as the server writes it, which
/// public/live.js turns into the reader's time zone (UTC stays on hover).
fn moment(ms: i64) -> Markup {
    let utc = utc_second(ms);
    html! { time datetime=(iso_utc(ms)) title=(utc) data-local="" { (utc) } }
}

/// An action type as people know it: the store's two pseudo-actions get
/// their names (the code stays on hover), business actions show as written.
fn action_label(action: &str, l: Locale) -> Markup {
    let name = match action {
        "http" => Some("HTTP Idempotency-Key"),
        "*" => Some(tr(l, "sem tipo (lease varrida)", "untyped (swept lease)")),
        _ => None,
    };
    html! {
        @match name {
            Some(name) => span class="pseudo-action" title=(action) { (name) },
            None => (action),
        }
    }
}

/// A table's head row of column headers.
fn head_row(heads: &[&str]) -> Markup {
    html! { thead { tr { @for h in heads { th scope="col" { (h) } } } } }
}

/// "3,00% (27 de 900 intenções)": the rate with its denominator.
fn rate_text(c: &Counts, l: Locale) -> String {
    match c.duplicate_rate_pct() {
        Some(r) => format!(
            "{} ({} {} {} {})",
            pct(r, l),
            count(c.redelivered_intents, l),
            tr(l, "de", "of"),
            count(c.intents, l),
            tr(l, "intenções", "intents")
        ),
        None => format!(
            "— ({})",
            tr(l, "nenhuma intenção na janela", "no intent in the window")
        ),
    }
}

fn scope_text(d: &LiveData, l: Locale) -> String {
    match &d.tenant {
        Some(t) => format!("{} {t}", tr(l, "tenant", "tenant")),
        None if d.tenants.len() == 1 => format!("{} {}", tr(l, "tenant", "tenant"), d.tenants[0]),
        None => format!(
            "{} {}",
            count(d.tenants.len() as i64, l),
            tr(l, "tenants", "tenants")
        ),
    }
}

/// The "use these numbers" link, saying where the numbers came from.
fn use_numbers_link(d: &LiveData, l: Locale) -> Markup {
    let Some(href) = &d.use_numbers else {
        let why = if d.window.len_ms() < DAY {
            tr(l, "Uma hora escalada para um mês (×720) é um palpite, não uma medida: escolha a janela de 24 h ou mais para levar os números à calculadora.",
               "An hour scaled to a month (×720) is a guess, not a measurement: pick the 24 h window or longer to take the numbers to the calculator.")
        } else {
            tr(
                l,
                "Sem intenções de negócio na janela: nada a levar para a calculadora ainda.",
                "No business intents in the window: nothing to take to the calculator yet.",
            )
        };
        return html! { p class="use-numbers note" { (why) } };
    };
    html! {
        p class="use-numbers" {
            a id="use-numbers" rel="external" href=(href) {
                (tr(l, "Usar estes números na calculadora", "Use these numbers in the calculator"))
            }
            " "
            span class="note" {
                (tr(l, "Medido em", "Measured on")) " " (scope_text(d, l)) ", " (d.window.label(l)) ". "
                (tr(l, "Contam só as intenções de ações de negócio (não as chaves HTTP Idempotency-Key nem as leases varridas sem tipo); a calculadora diz de onde veio cada número. Por ação: links na tabela abaixo.",
                    "Only business actions' intents count (not HTTP Idempotency-Key records nor untyped swept leases); the calculator says where each number came from. Per action: links in the table below."))
            }
        }
    }
}

/// The calculator link for one row (one tenant and action), when it is a
/// conversation action with intents.
fn row_use_href(d: &LiveData, r: &super::data::LiveRow) -> Option<String> {
    if !super::data::is_conversation_action(&r.action) {
        return None;
    }
    super::data::use_numbers_href(d.window, &r.counts, Some(&r.tenant), Some(&r.action))
}

/// A text in the page's language that `live.js` switches in place with
/// the page (both languages ride along as `data-pt` and `data-en`).
fn both(l: Locale, pt: &'static str, en: &'static str) -> Markup {
    html! { span data-pt=(pt) data-en=(en) { (tr(l, pt, en)) } }
}

/// The tenant and window form of `/live` (plain GET: works without
/// JavaScript; `live.js` submits it on change). Every text carries both
/// languages (`data-pt`, `data-en`), so an in-place language switch
/// relabels the controls with the rest of the page.
pub fn controls_html(d: &LiveData, l: Locale) -> String {
    html! {
        form class="live-controls" method="get" action="/live" {
            @if d.admin {
                label {
                    (both(l, "Tenant", "Tenant")) " "
                    select name="tenant" {
                        option value="" data-pt="todos" data-en="all" { (tr(l, "todos", "all")) }
                        @for t in &d.tenants_all() {
                            option value=(t) selected[d.tenant.as_deref() == Some(t.as_str())] { (t) }
                        }
                    }
                }
            }
            label {
                (both(l, "Janela", "Window")) " "
                select name="window" {
                    @for w in Window::ALL {
                        option value=(w.as_str()) selected[w == d.window]
                            data-pt=(w.label(Locale::PtBr)) data-en=(w.label(Locale::EnUs)) { (w.label(l)) }
                    }
                }
            }
            input type="hidden" name="lang" value=(l.tag());
            button type="submit" data-pt="Mostrar" data-en="Show" { (tr(l, "Mostrar", "Show")) }
        }
    }
    .into_string()
}

/// The whole monitor (`/live`).
pub fn live_html(d: &LiveData, l: Locale) -> String {
    let t = &d.totals;
    html! {
        p class="live-scope" {
            (scope_text(d, l)) " · " (d.window.label(l)) " · "
            // To the minute: a text that changed every second would make every
            // snapshot new, and the feed sends only what changed.
            (tr(l, "lido às", "read at")) " " (utc_minute(d.generated_ms))
        }
        div class="live-cards" {
            (card("live-intents", tr(l, "Intenções", "Intents"), &count(t.intents, l),
                tr(l, "registradas pela primeira vez", "recorded for the first time"), ""))
            (card("live-deliveries", tr(l, "Entregas", "Deliveries"), &count(t.deliveries, l),
                tr(l, "primeiras e repetidas", "first ones and repeats"), ""))
            (card("live-redeliveries", tr(l, "Reentregas absorvidas", "Redeliveries absorbed"),
                &count(t.redeliveries, l),
                tr(l, "a chave primária devolveu a intenção congelada", "the primary key returned the frozen intent"), ""))
            (card("live-rate", tr(l, "Taxa de duplicatas medida", "Measured duplicate rate"), &rate_text(t, l),
                tr(l, "intenções entregues mais de uma vez", "intents delivered more than once"), ""))
            (card("live-divergences", tr(l, "Divergências", "Divergences"), &count(t.divergences, l),
                tr(l, "reentregas cuja nova extração teria cobrado outra coisa",
                    "redeliveries whose fresh extraction would have charged something else"),
                if t.divergences > 0 { "warn" } else { "" }))
            (card("live-http", tr(l, "HTTP: replays · 409 · 422", "HTTP: replays · 409 · 422"),
                &format!("{} · {} · {}", count(t.http_replays, l), count(t.http_409, l), count(t.http_422, l)),
                tr(l, "respostas repetidas, chave em uso, chave com outro pedido",
                    "replayed answers, key in use, key with another request"), ""))
        }
        h2 { (tr(l, "Ações", "Actions")) }
        div class="live-cards" {
            (card("live-in-flight", tr(l, "Em andamento agora", "In flight now"), &count(d.in_flight, l),
                tr(l, "com lease vigente", "holding a running lease"), ""))
            (card("live-completed", tr(l, "Concluídas", "Completed"), &count(t.actions_completed, l),
                d.window.label(l), ""))
            (card("live-failed", tr(l, "Falharam", "Failed"), &count(t.actions_failed, l),
                d.window.label(l), ""))
            (card("live-uncertain", tr(l, "Incertas agora", "Uncertain now"), &count(d.uncertain, l),
                tr(l, "lease expirou sem resultado: reconciliar", "lease ran out with no outcome: reconcile"),
                if d.uncertain > 0 { "alert" } else { "" }))
        }
        (alerts_firing(d, l))
        (uncertain_table(d, l))
        (unresolved_table(d, l))
        (webhooks(d, l))
        (mcp_tools(d, l))
        (horizon(d, l))
        (use_numbers_link(d, l))
        (series_charts(d, l))
        (rows_table(d, l))
    }
    .into_string()
}

/// The alerts firing now, above everything else they concern.
fn alerts_firing(d: &LiveData, l: Locale) -> Markup {
    html! {
        @if !d.alerts_firing.is_empty() {
            section class="uncertain alert" id="live-alerts" role="alert" {
                h3 { (tr(l, "Alertas disparados", "Alerts firing")) " (" (d.alerts_firing.len()) ")" }
                ul {
                    @for a in &d.alerts_firing {
                        li data-alert=(a.alert_id) {
                            strong { (a.metric) } " = " (a.value.as_deref().unwrap_or("—")) " > " (a.above)
                            " · " (a.tenant) " · " code { (a.alert_id) }
                            @if let Some(t) = a.since_ms { " · " (tr(l, "desde", "since")) " " (moment(t)) }
                        }
                    }
                }
            }
        }
    }
}

fn uncertain_table(d: &LiveData, l: Locale) -> Markup {
    // The exports and detail links keep the page's tenant and language.
    let scope = export_query(d.tenant.as_deref(), l);
    html! {
        @if !d.uncertain_keys.is_empty() {
            section class="uncertain alert" id="live-uncertain-keys" {
                h3 { (tr(l, "Precisam de reconciliação", "Need reconciliation")) " (" (count(d.uncertain, l)) ")" }
                @if (d.uncertain_keys.len() as i64) < d.uncertain {
                    p class="note" { (tr(l, "As mais recentes", "The newest")) " " (count(d.uncertain_keys.len() as i64, l)) " " (tr(l, "de", "of")) " " (count(d.uncertain, l)) ". " (tr(l, "A lista inteira está nos arquivos abaixo.", "The whole list is in the files below.")) }
                }
                p { (tr(l, "Pergunte ao provedor o que aconteceu e registre na página da ação (abra a chave), ou repita a chamada com a mesma chave.",
                        "Ask the provider what happened and record it on the action's page (open the key), or retry the call with the same key.")) }
                p class="exports" {
                    (tr(l, "Baixar a lista:", "Download the list:")) " "
                    a id="live-uncertain-csv" href={ "/live/uncertain.csv?" (scope) } rel="external" download { "CSV" } " · "
                    a id="live-uncertain-json" href={ "/live/uncertain.json?" (scope) } rel="external" { "JSON" }
                }
                (scrolling(tr(l, "Ações incertas", "Uncertain actions"), l, html! { table id="live-uncertain-table" {
                    (head_row(&[
                        tr(l, "Chave", "Key"),
                        tr(l, "Referência", "Reference"),
                        tr(l, "Valor", "Amount"),
                        tr(l, "Cliente", "Customer"),
                        tr(l, "Ação", "Action"),
                        tr(l, "Tenant", "Tenant"),
                        tr(l, "Início", "Started"),
                        tr(l, "Lease terminou", "Lease ended"),
                        tr(l, "Idade", "Age"),
                        tr(l, "Tentativas", "Attempts"),
                    ]))
                    tbody {
                        @for u in &d.uncertain_keys {
                            tr data-key=(u.key) {
                                td class="key" {
                                    a href={ "/live/actions/" (u.key) "?" (export_query(Some(&u.tenant), l)) } rel="external" title=(u.key) { code { (short_key(&u.key)) } }
                                    " " (copy_button(&u.key, tr(l, "Copiar a chave", "Copy the key"), l))
                                }
                                td { @if let Some(r) = &u.reference { (r) " " (copy_button(r, tr(l, "Copiar a referência", "Copy the reference"), l)) } @else { "—" } }
                                td class="num" { @if let Some(a) = u.amount { (super::data::IntentFacts::amount_text(a, u.currency, l)) } @else { "—" } }
                                td { @if let Some(c) = &u.customer { (c) " " (copy_button(c, tr(l, "Copiar o cliente", "Copy the customer"), l)) } @else { "—" } }
                                td { (action_label(&u.action, l)) }
                                td { (u.tenant) }
                                td { (moment(u.started_ms)) }
                                td { @if let Some(ms) = u.lease_until_ms { (moment(ms)) } @else { "—" } }
                                td class="num" { (duration(u.age_ms, l)) }
                                td class="num" { (u.attempts) }
                            }
                        }
                    }
                } }))
            }
        }
    }
}

/// `tenant=…&lang=…` for links that keep the page's scope.
pub fn export_query(tenant: Option<&str>, l: Locale) -> String {
    let mut q = form_urlencoded::Serializer::new(String::new());
    if let Some(t) = tenant {
        q.append_pair("tenant", t);
    }
    q.append_pair("lang", l.tag());
    q.finish()
}

/// A key as a person scans it: the first 12 hex digits (the whole key is
/// in the link's title and behind the copy button).
pub fn short_key(key: &str) -> String {
    format!("{}…", key.get(..12).unwrap_or(key))
}

/// A button that copies `text` as it is (public/page.js); `label` says what
/// it copies, for screen readers and on hover.
pub fn copy_button(text: &str, label: &str, l: Locale) -> Markup {
    let text = idem_core::reveal_bidi(text);
    html! {
        button type="button" class="copy" data-copy-text=(text) aria-label=(label) title=(label)
            data-done=(tr(l, "Copiado", "Copied")) { (tr(l, "Copiar", "Copy")) }
    }
}

/// Per tenant, the actions retention keeps because they are not settled,
/// and how long the oldest has waited.
fn unresolved_table(d: &LiveData, l: Locale) -> Markup {
    html! {
        @if !d.unresolved.is_empty() {
            section class="unresolved" id="live-unresolved" {
                h3 { (tr(l, "Ações não resolvidas", "Unsettled actions")) }
                p class="note" { (tr(l,
                    "Em andamento, incertas ou com falha que ainda pode ser repetida: a retenção não as apaga (nem suas intenções) até que sejam concluídas, falhem de vez ou sejam reconciliadas.",
                    "In flight, uncertain, or failed but retryable: retention removes neither them nor their intents until they are completed, failed for good or reconciled.")) }
                (scrolling(tr(l, "Ações não resolvidas", "Unsettled actions"), l, html! { table {
                    (head_row(&[
                        tr(l, "Tenant", "Tenant"),
                        tr(l, "Não resolvidas", "Unsettled"),
                        tr(l, "Idade da mais antiga", "Age of the oldest"),
                    ]))
                    tbody {
                        @for u in &d.unresolved {
                            tr {
                                th scope="row" { (u.tenant) }
                                td { (count(u.count, l)) }
                                td { (u.oldest_age_ms.map(|ms| duration(ms, l)).unwrap_or_else(|| "—".into())) }
                            }
                        }
                    }
                } }))
            }
        }
    }
}

/// The outbox relay's deliveries, once there are any.
fn webhooks(d: &LiveData, l: Locale) -> Markup {
    let w = &d.webhooks;
    html! {
        @if w.any() {
            section class={ "webhooks" @if w.dead_lettered > 0 { " warn" } } id="live-webhooks" {
                h3 { (tr(l, "Webhooks (outbox)", "Webhooks (outbox)")) }
                (scrolling("Webhooks (outbox)", l, html! { table {
                    (head_row(&[
                        tr(l, "Pendentes", "Pending"),
                        tr(l, "Em nova tentativa", "Retrying"),
                        tr(l, "Entregues", "Delivered"),
                        tr(l, "Descartados (dead letter)", "Dead-lettered"),
                        tr(l, "Espera da mais antiga", "Oldest waiting"),
                    ]))
                    tbody {
                        tr {
                            td { (count(w.pending, l)) }
                            td { (count(w.retrying, l)) }
                            td { (count(w.delivered, l)) }
                            td { (count(w.dead_lettered, l)) }
                            td { (w.oldest_waiting_age_ms.map(|ms| duration(ms, l)).unwrap_or_else(|| "—".into())) }
                        }
                    }
                } }))
            }
        }
    }
}

/// The MCP gateway's guarded tools, once an agent called any.
fn mcp_tools(d: &LiveData, l: Locale) -> Markup {
    html! {
        @if !d.mcp_tools.is_empty() {
            section class="mcp" id="live-mcp" {
                h3 { (tr(l, "Ferramentas MCP protegidas", "Guarded MCP tools")) }
                (scrolling("MCP", l, html! { table {
                    (head_row(&[
                        tr(l, "Tenant", "Tenant"),
                        tr(l, "Ferramenta", "Tool"),
                        tr(l, "Chamadas", "Calls"),
                        tr(l, "Execuções", "Executions"),
                        tr(l, "Repetições respondidas", "Replays"),
                        tr(l, "Resolvidas (consultas)", "Settled (lookups)"),
                        tr(l, "Divergências", "Divergences"),
                        tr(l, "Incertas", "Uncertain"),
                        tr(l, "Em andamento", "In flight"),
                        tr(l, "Recusadas", "Refused"),
                        tr(l, "Sem registro (com sucesso)", "Unrecorded (succeeded)"),
                    ]))
                    tbody {
                        @for t in &d.mcp_tools {
                            tr {
                                td { (t.tenant) }
                                td { code { (t.counts.tool) } }
                                td { (count(t.counts.calls, l)) }
                                td { (count(t.counts.executions, l)) }
                                td { (count(t.counts.replays, l)) }
                                td { (count(t.counts.settled, l)) " (" (count(t.counts.lookups, l)) ")" }
                                td { (count(t.counts.divergences, l)) }
                                td { (count(t.counts.uncertain, l)) }
                                td { (count(t.counts.in_flight, l)) }
                                td { (count(t.counts.refused + t.counts.failed + t.counts.unrecorded_refused, l)) }
                                td class=[(t.counts.unrecorded_successes > 0).then_some("alarm")] {
                                    (count(t.counts.unrecorded, l))
                                    @if t.counts.unrecorded_successes > 0 {
                                        " (" strong { (count(t.counts.unrecorded_successes, l)) } ")"
                                    }
                                }
                            }
                        }
                    }
                } }))
                @for t in d.mcp_tools.iter().filter(|t| t.counts.unrecorded_successes > 0) {
                    p class="warning" role="alert" {
                        (tr(l,
                            "Alarme: ",
                            "Alarm: "))
                        code { (t.counts.tool) } " (" (t.tenant) "): "
                        (tr(l,
                            "uma chamada sem o que a chave lê em _meta foi repassada sem registro e respondida com sucesso. O guard não vê como as chamadas desta ferramenta pagam; ele recusa toda chamada sem registro até o arquivo de guard ser corrigido e o gateway reiniciado (idem mcp gateway --check).",
                            "a call carrying none of the _meta entries its key reads was forwarded unrecorded and answered with success. The guard does not see how this tool's calls pay; it refuses every unrecorded call until the guard file is fixed and the gateway restarted (idem mcp gateway --check)."))
                    }
                }
            }
        }
    }
}

fn horizon(d: &LiveData, l: Locale) -> Markup {
    let h = &d.horizon;
    let show = |v: Option<i64>| v.map(|ms| duration(ms, l)).unwrap_or_else(|| "—".into());
    html! {
        section class={ "horizon" @if h.warning { " warn" } } id="live-horizon" {
            h3 { (tr(l, "Horizonte de reentrega", "Redelivery horizon")) }
            p {
                (tr(l, "Atraso entre a primeira e a última entrega", "Delay between first and last delivery"))
                ": p99 " strong { (show(h.p99_ms)) } ", " (tr(l, "máximo", "max")) " "
                strong { (show(h.max_ms)) } " (" (count(h.measured, l)) " "
                (tr(l, "reentregas medidas", "redeliveries measured")) ") · "
                (tr(l, "retenção das intenções", "intent retention")) ": "
                strong { (show(h.retention_ms)) }
            }
            @if h.warning {
                p class="warning" role="alert" {
                    (tr(l,
                        "A retenção é menor que o dobro do maior atraso observado: uma reentrega tardia pode chegar depois que a intenção foi apagada e executar de novo. Aumente a retenção (idem retention).",
                        "Retention is under twice the longest delay observed: a late redelivery may arrive after the intent is purged and run again. Raise the retention (idem retention)."))
                }
            }
        }
    }
}

/// The monitor's answer to an address it cannot read (a bad `window` or
/// `tenant`): why, and a way back to the default view.
pub fn refused_html(why: &str, l: Locale) -> String {
    html! {
        p class="field-error" role="alert" id="live-refused" {
            (tr(l, "Endereço inválido: ", "Invalid address: ")) (why)
        }
        p { a href="/live" rel="external" { (tr(l, "Abrir o monitor nas últimas 24 h", "Open the monitor on the last 24 h")) } }
    }
    .into_string()
}

/// The monitor's two charts' text (heading, caption, table), in
/// [`app::charts::LIVE_NAMES`] order: what the page shows around each
/// image and what the image carries as its title and description.
pub fn live_figures(d: &LiveData, l: Locale) -> [Figure; 2] {
    let s = &d.series;
    let span = match (s.first(), s.last()) {
        (Some(a), Some(b)) => format!(
            "{} {}, {} – {}.",
            tr(l, "Um ponto por", "One point per"),
            duration(d.bucket_ms, l),
            utc_minute(a.start_ms),
            utc_minute(b.start_ms)
        ),
        _ => tr(l, "Sem pontos na janela.", "No points in the window.").to_owned(),
    };
    let rate = |p: &super::data::LivePoint| {
        Counts {
            intents: p.intents,
            redelivered_intents: p.redelivered_intents,
            ..Counts::default()
        }
        .duplicate_rate_pct()
        .map(|r| pct(r, l))
        .unwrap_or_else(|| "—".into())
    };
    // The tables list the buckets that saw traffic.
    let rows: Vec<Vec<String>> = s
        .iter()
        .filter(|p| p.deliveries > 0)
        .map(|p| {
            vec![
                utc_minute(p.start_ms),
                count(p.deliveries, l),
                count(p.redeliveries, l),
                rate(p),
            ]
        })
        .collect();
    let head: Vec<String> = [
        tr(l, "Início (UTC)", "Start (UTC)"),
        tr(l, "Entregas", "Deliveries"),
        tr(l, "Reentregas", "Redeliveries"),
        tr(l, "Taxa", "Rate"),
    ]
    .map(str::to_owned)
    .to_vec();
    [
        Figure {
            id: "live-chart-deliveries".into(),
            title: tr(
                l,
                "Entregas e reentregas por intervalo",
                "Deliveries and redeliveries per bucket",
            )
            .into(),
            caption: format!(
                "{span} {}",
                tr(
                    l,
                    "Azul: entregas; vermelho: reentregas.",
                    "Blue: deliveries; red: redeliveries."
                )
            ),
            note: None,
            head: head.clone(),
            rows: rows.clone(),
            height: LIVE_HEIGHT,
        },
        Figure {
            id: "live-chart-rate".into(),
            title: tr(
                l,
                "Taxa de duplicatas por intervalo",
                "Duplicate rate per bucket",
            )
            .into(),
            caption: format!(
                "{span} {}",
                tr(
                    l,
                    "Intenções entregues mais de uma vez sobre intenções registradas no intervalo.",
                    "Intents delivered more than once over intents recorded in the bucket."
                )
            ),
            note: None,
            head,
            rows,
            height: LIVE_HEIGHT,
        },
    ]
}

/// The monitor's charts: images drawn by the server at
/// `/live/charts/{name}.svg` (same access rules as the page). The address
/// carries a digest of the series, so a refresh of the feed swaps the
/// image only when the numbers moved.
fn series_charts(d: &LiveData, l: Locale) -> Markup {
    if d.series.is_empty() {
        return html! {};
    }
    let mut digest = std::hash::DefaultHasher::new();
    for p in &d.series {
        (
            p.start_ms,
            p.deliveries,
            p.redeliveries,
            p.intents,
            p.redelivered_intents,
        )
            .hash(&mut digest);
    }
    let mut query = format!("window={}&lang={}", d.window.as_str(), l.tag());
    if let Some(t) = &d.tenant {
        query.push('&');
        query.push_str(
            &form_urlencoded::Serializer::new(String::new())
                .append_pair("tenant", t)
                .finish(),
        );
    }
    let version = format!("{:016x}", digest.finish());
    html! {
        section class="charts" {
            @for (name, figure) in LIVE_NAMES.iter().zip(live_figures(d, l)) {
                (figure_html(&figure, &format!("/live/charts/{name}.svg?{query}&v={version}"), l))
            }
        }
    }
}

fn rows_table(d: &LiveData, l: Locale) -> Markup {
    let heads = [
        tr(l, "Tenant", "Tenant"),
        tr(l, "Ação", "Action"),
        tr(l, "Intenções", "Intents"),
        tr(l, "Entregas", "Deliveries"),
        tr(l, "Reentregas", "Redeliveries"),
        tr(l, "Taxa de duplicatas", "Duplicate rate"),
        tr(l, "Divergências", "Divergences"),
        tr(l, "Concluídas", "Completed"),
        tr(l, "Falharam", "Failed"),
        tr(l, "Ficaram incertas", "Became uncertain"),
        tr(l, "Incertas agora", "Uncertain now"),
        tr(l, "Replays · 409 · 422", "Replays · 409 · 422"),
        tr(l, "Usar na calculadora", "Use in the calculator"),
    ];
    html! {
        h2 { (tr(l, "Por tenant e tipo de ação", "By tenant and action type")) }
        (scrolling(tr(l, "Por tenant e tipo de ação", "By tenant and action type"), l, html! { table class="live-rows" id="live-rows" {
            (head_row(&heads))
            tbody {
                @if d.rows.is_empty() {
                    tr { td colspan="13" { (tr(l, "Nenhuma atividade na janela.", "No activity in the window.")) } }
                }
                @for r in &d.rows {
                    @let c = &r.counts;
                    tr {
                        th scope="row" { (r.tenant) }
                        td { (action_label(&r.action, l)) }
                        td { (count(c.intents, l)) }
                        td { (count(c.deliveries, l)) }
                        td { (count(c.redeliveries, l)) }
                        td { (rate_text(c, l)) }
                        td { (count(c.divergences, l)) }
                        td { (count(c.actions_completed, l)) }
                        td { (count(c.actions_failed, l)) }
                        td { (count(c.actions_uncertain, l)) }
                        td class={ "uncertain-now" @if r.uncertain_now > 0 { " alert" } } { (count(r.uncertain_now, l)) }
                        td { (count(c.http_replays, l)) " · " (count(c.http_409, l)) " · " (count(c.http_422, l)) }
                        td {
                            @if let Some(h) = row_use_href(d, r) {
                                a class="use-row" rel="external" href=(h) { (tr(l, "calculadora", "calculator")) }
                            }
                        }
                    }
                }
            }
        } }))
    }
}

/// The compact panel under the calculator.
pub fn panel_html(d: &LiveData, l: Locale) -> String {
    let t = &d.totals;
    let items = [
        (
            "panel-intents",
            tr(l, "Intenções", "Intents"),
            count(t.intents, l),
        ),
        (
            "panel-rate",
            tr(l, "Taxa de duplicatas medida", "Measured duplicate rate"),
            rate_text(t, l),
        ),
        (
            "panel-divergences",
            tr(l, "Divergências", "Divergences"),
            count(t.divergences, l),
        ),
        (
            "panel-uncertain",
            tr(l, "Ações incertas agora", "Uncertain actions now"),
            count(d.uncertain, l),
        ),
    ];
    html! {
        dl class="live-panel" {
            @for (id, k, v) in &items {
                div id=(id) { dt { (k) } dd { (v) } }
            }
        }
        (use_numbers_link(d, l))
        p { a href={ "/live?lang=" (l.tag()) } rel="external" { (tr(l, "Abrir o monitor ao vivo", "Open the live monitor")) } }
    }
    .into_string()
}

/// The feed-status texts, in both languages, by state. `static` is what
/// the server writes: without the script nothing updates the numbers, and
/// the line says so; `live.js` moves it to `connecting` when it starts.
const STATUS: [(&str, &str, &str); 8] = [
    (
        "static",
        "números de quando a página abriu: recarregue para atualizar",
        "numbers as of page load: reload to update",
    ),
    (
        "connecting",
        "conectando ao feed ao vivo…",
        "connecting to the live feed…",
    ),
    ("live", "ao vivo", "live"),
    ("reconnected", "ao vivo (reconectado)", "live (reconnected)"),
    (
        "stale",
        "dados desatualizados: sem notícias do servidor há mais de 2 s",
        "stale: no word from the server for over 2 s",
    ),
    (
        "disconnected",
        "desconectado: tentando reconectar…",
        "disconnected: trying to reconnect…",
    ),
    (
        "polling",
        "ao vivo (consultando a cada 2 s)",
        "live (polling every 2 s)",
    ),
    ("off", "sem feed ao vivo", "no live feed"),
];

/// The feed-status line `live.js` keeps current. Its texts travel as data
/// attributes, in both languages, so the script needs none of its own.
/// (maud names attributes statically, so this one element is assembled
/// here; every value still goes through maud's escaping.)
fn status_html(id: &str, l: Locale) -> Markup {
    let mut attrs = String::new();
    for (state, pt, en) in STATUS {
        attrs.push_str(&format!(
            " data-pt-{state}=\"{}\" data-en-{state}=\"{}\"",
            pt.render().into_string(),
            en.render().into_string()
        ));
    }
    let text = tr(l, STATUS[0].1, STATUS[0].2);
    html! {
        (PreEscaped(format!(
            "<p id=\"{}\" class=\"feed-status\" role=\"status\" data-state=\"static\"{attrs}>{}</p>",
            id.render().into_string(),
            text.render().into_string()
        )))
    }
}

/// The whole `/live` page body: title, controls, feed status, numbers.
/// Headings carry both languages as data attributes, for `live.js`, which
/// switches them in place.
/// `feed` is empty when the viewer may not see traffic (then `numbers` is
/// the sign-in form or the reason). `controls` and `numbers` are markup
/// this module made.
pub fn page_html(controls: &str, numbers: &str, feed: &str, l: Locale) -> String {
    html! {
        @let (pt, en) = ("Monitor de duplicatas ao vivo", "Live duplicate monitor");
        h1 data-pt=(pt) data-en=(en) { (tr(l, pt, en)) }
        div id="live-controls" { (PreEscaped(controls)) }
        @if !feed.is_empty() { (status_html("live-status", l)) }
        div id="live-root" class="live" data-feed=(feed) data-status="live-status" { (PreEscaped(numbers)) }
        script src="/live.js" defer {}
    }
    .into_string()
}

/// The calculator's panel: title, feed status, numbers (markup this module
/// made).
pub fn panel_frame_html(numbers: &str, feed: &str, l: Locale) -> String {
    html! {
        @let (pt, en) = ("Tráfego real (últimas 24 h)", "Real traffic (last 24 h)");
        h2 id="live-panel-title" data-pt=(pt) data-en=(en) { (tr(l, pt, en)) }
        @if !feed.is_empty() { (status_html("live-panel-status", l)) }
        div id="live-panel" data-feed=(feed) data-status="live-panel-status" { (PreEscaped(numbers)) }
        script src="/live.js" defer {}
    }
    .into_string()
}

/// The panel before the feed's first event (and, without JavaScript, for
/// good: with a link to the page that shows the numbers).
pub fn panel_waiting_html(l: Locale) -> String {
    html! {
        p class="note" {
            (tr(l, "Lendo o tráfego real…", "Reading real traffic…")) " "
            a href={ "/live?lang=" (l.tag()) } rel="external" { (tr(l, "Abrir o monitor ao vivo", "Open the live monitor")) }
        }
    }
    .into_string()
}

/// What the panel and page say to a viewer who may not see traffic.
pub fn locked_html(l: Locale) -> String {
    html! {
        p class="live-locked" {
            (tr(l, "O tráfego real aparece aqui para quem entrar com um token.",
                "Real traffic shows here once you sign in with a token.")) " "
            a href={ "/live?lang=" (l.tag()) } rel="external" { (tr(l, "Entrar", "Sign in")) }
        }
    }
    .into_string()
}

/// The sign-out button of a signed-in visitor (`POST /live/logout`).
pub fn logout_html(csrf: &str, l: Locale) -> String {
    html! {
        form class="live-logout" method="post" action="/live/logout" {
            input type="hidden" name="csrf" value=(csrf);
            input type="hidden" name="lang" value=(l.tag());
            button type="submit" data-pt="Sair" data-en="Sign out" { (tr(l, "Sair", "Sign out")) }
        }
    }
    .into_string()
}

/// The sign-in form of `/live` (a token: admin, or a tenant's API token).
pub fn login_html(l: Locale, failed: bool, form_token: &str) -> String {
    html! {
        @if failed {
            p class="field-error" role="alert" {
                (both(l, "Token recusado: confira e tente de novo.", "Token refused: check it and try again."))
            }
        }
        form class="live-login" method="post" action="/live/login" {
            p { (both(l,
                "Este servidor não está só na máquina local: o monitor pede um token. O token de administração mostra todos os tenants; o token de API de um tenant mostra só o dele.",
                "This server is not loopback-only: the monitor asks for a token. The admin token shows every tenant; a tenant's API token shows only its own.")) }
            label { (both(l, "Token", "Token")) " " input type="password" name="token" autocomplete="current-password" required; }
            input type="hidden" name="lang" value=(l.tag());
            input type="hidden" name=(app::FORM_FIELD) value=(form_token);
            button type="submit" data-pt="Entrar" data-en="Sign in" { (tr(l, "Entrar", "Sign in")) }
        }
    }
    .into_string()
}

#[cfg(test)]
mod tests {
    use super::super::data::tests::totals;
    use super::super::data::{use_numbers_href, LiveRow};
    use super::*;

    #[test]
    fn pseudo_actions_are_named_and_instants_carry_utc_to_the_second() {
        assert_eq!(
            action_label("http", Locale::EnUs).into_string(),
            "<span class=\"pseudo-action\" title=\"http\">HTTP Idempotency-Key</span>"
        );
        assert_eq!(
            action_label("*", Locale::PtBr).into_string(),
            "<span class=\"pseudo-action\" title=\"*\">sem tipo (lease varrida)</span>"
        );
        assert_eq!(
            action_label("pix.cobranca", Locale::PtBr).into_string(),
            "pix.cobranca"
        );
        assert_eq!(
            moment(1_796_040_309_999).into_string(),
            "<time datetime=\"2026-11-30T12:05:09Z\" title=\"2026-11-30 12:05:09 UTC\" data-local=\"\">2026-11-30 12:05:09 UTC</time>"
        );
    }

    #[test]
    fn the_monitor_escapes_what_tenants_wrote() {
        let d = LiveData {
            tenants: vec!["<b>x</b>".into()],
            rows: vec![LiveRow {
                tenant: "<b>x</b>".into(),
                action: "a&b".into(),
                counts: totals(2, 1),
                uncertain_now: 0,
            }],
            totals: totals(2, 1),
            use_numbers: use_numbers_href(Window::Day, &totals(2, 1), None, None),
            admin: true,
            ..LiveData::default()
        };
        let html = live_html(&d, Locale::EnUs);
        assert!(!html.contains("<b>x</b>"), "{html}");
        assert!(html.contains("&lt;b&gt;x&lt;/b&gt;"));
        assert!(html.contains("a&amp;b"));
        assert!(html.contains("50.00% (1 of 2 intents)"), "{html}");
        assert!(panel_html(&d, Locale::PtBr).contains("50,00% (1 de 2 intenções)"));
        let controls = controls_html(&d, Locale::EnUs);
        assert!(!controls.contains("<b>x</b>"), "{controls}");
        let page = page_html(&controls, &html, "/live/events?a=1&b=\"2\"", Locale::EnUs);
        assert!(
            page.contains("data-feed=\"/live/events?a=1&amp;b=&quot;2&quot;\""),
            "{page}"
        );
    }

    #[test]
    fn the_status_line_carries_both_languages() {
        let s = status_html("live-status", Locale::PtBr).into_string();
        assert!(s.starts_with(
            "<p id=\"live-status\" class=\"feed-status\" role=\"status\" data-state=\"static\""
        ));
        assert!(
            s.contains("data-en-stale=\"stale: no word from the server for over 2 s\""),
            "{s}"
        );
        assert!(
            s.ends_with(">números de quando a página abriu: recarregue para atualizar</p>"),
            "{s}"
        );
        assert!(s.contains("data-pt-connecting=\"conectando ao feed ao vivo…\""));
    }

    #[test]
    fn the_charts_are_images_of_their_own_address_with_tables() {
        let point = |start_ms, deliveries, redeliveries| super::super::data::LivePoint {
            start_ms,
            deliveries,
            redeliveries,
            intents: deliveries - redeliveries,
            redelivered_intents: redeliveries,
        };
        let d = LiveData {
            bucket_ms: MINUTE,
            series: vec![
                point(0, 4, 1),
                point(MINUTE, 0, 0),
                point(2 * MINUTE, 10, 5),
            ],
            ..LiveData::default()
        };
        let html = live_html(&d, Locale::EnUs);
        for want in [
            "<figure class=\"chart\" id=\"live-chart-deliveries\"><h3>Deliveries and redeliveries per bucket</h3>",
            "<img src=\"/live/charts/deliveries.svg?window=24h&amp;lang=en-US&amp;v=",
            "<img src=\"/live/charts/rate.svg?window=24h&amp;lang=en-US&amp;v=",
            "Copy image link",
            "<figure class=\"chart\" id=\"live-chart-rate\">",
            "<th scope=\"row\">1970-01-01 00:02 UTC</th><td>10</td><td>5</td><td>100.00%</td>",
        ] {
            assert!(html.contains(want), "{want} missing from {html}");
        }
        // A bucket without deliveries is drawn but not listed.
        assert!(!html.contains("<th scope=\"row\">1970-01-01 00:01 UTC</th>"));
    }

    #[test]
    fn durations_read_naturally() {
        assert_eq!(duration(850, Locale::PtBr), "850 ms");
        assert_eq!(duration(90_000, Locale::PtBr), "1,5 min");
        assert_eq!(duration(2 * DAY, Locale::EnUs), "2 d");
    }
}
