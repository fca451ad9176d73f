//! The calculator's components: the page, its share bar, its number
//! fields, the headline and the results.

use super::form::{encode_param, encode_text, saved_query, scenario_href, Form, TYPED_KEY};
use super::notices::ServerMarkup;
use super::rows::rows;
use crate::charts::Charts;
use crate::i18n::{currency_name, field_label, problem_text, tr, Prefs, T};
use crate::SavedView;
use idem_core::cost::{CostOutputs, PriceUnit};
use idem_core::locale::{format_decimal, format_price, Currency, Locale};
use idem_core::scenario::{depends_on, parse_canonical, Field, Problem, Scenario, UnitWarning};
use leptos::prelude::*;

/// The calculator, starting from a query string's scenario, optionally a
/// saved one (then the address bar keeps its short link until an edit).
#[component]
pub fn Calculator(
    /// The query pairs to start from (canonical, or typed with `t=1`).
    initial: Vec<(String, String)>,
    /// The saved scenario this page shows, if any.
    saved: Option<SavedView>,
) -> impl IntoView {
    let prefs = expect_context::<Prefs>();
    let locale = prefs.locale;
    let markup = ServerMarkup::current();
    let form = Form::from_query(&initial, locale.get_untracked());
    // Every field read and checked once per change: the scenario (with
    // stand-ins for refused fields), its outputs, and the refused fields.
    let lenient = Memo::new(move |_| {
        let (s, blocked) = form.lenient(locale.get());
        let outputs = s.compute().ok();
        (s, outputs, blocked)
    });
    // The scenario while every field agrees.
    let scenario =
        Memo::new(move |_| lenient.with(|(s, _, blocked)| blocked.is_empty().then(|| s.clone())));
    // The scenario from before the edit under way: taken each time focus
    // enters the form (a field, a select, a button) while every field
    // agrees. While a field is refused, links and exports carry it, never
    // the last keystrokes that happened to read ("12" on the way to a
    // refused "12.500").
    let before_edit = StoredValue::new(scenario.get_untracked());
    let edit_starts = move || {
        if let Some(s) = scenario.get_untracked() {
            before_edit.set_value(Some(s));
        }
    };
    // What links and exports carry: the scenario on the page while every
    // field agrees, else the one from before the edit (None until there
    // is one: the links are off). Read when the scenario changes, so the
    // snapshot is the latest one taken.
    let last_valid = Memo::new(move |_| scenario.get().or_else(|| before_edit.get_value()));
    let saved_for_href = saved.clone();
    let href = Memo::new(move |_| {
        last_valid
            .get()
            .map(|s| scenario_href(&s, saved_for_href.as_ref(), locale.get()))
    });
    let query = Memo::new(move |_| last_valid.get().map(|s| s.to_query()));
    // The saved scenario while the inputs still hold it (id, name): the CSV
    // is named after it, the comparison names its column by it, and its
    // banner shows; an edit makes a new scenario and they let go.
    let saved_for_unchanged = saved.clone();
    let unchanged = Signal::derive(move || {
        let q = query.get()?;
        saved_for_unchanged
            .as_ref()
            .filter(|v| saved_query(v) == q)
            .map(|v| (v.id.clone(), v.name.clone()))
    });
    let stale = Signal::derive(move || scenario.with(Option::is_none));
    // The charts' figures (image, caption, controls, table): the server
    // writes them, in the page and at `/charts/figures?<query>`. Once the
    // inputs have been still for about 300 ms the browser fetches the new
    // figures, whose images the server then draws, so typing a number costs
    // one drawing, not one per keystroke, and the wasm carries no chart
    // code. While a field is refused the charts step aside (the results
    // say why).
    #[cfg(feature = "ssr")]
    let charts = RwSignal::new(lenient.with_untracked(|(s, o, blocked)| match o {
        Some(o) if blocked.is_empty() => (markup.charts)(s, o, locale.get_untracked()),
        _ => String::new(),
    }));
    // Hydration keeps the server's markup (it never rewrites inner HTML),
    // and an update rewrites it only when the text differs from the last
    // one set: starting from a text no update sets, the first one (the
    // empty text of a refused field included) always reaches the page.
    #[cfg(not(feature = "ssr"))]
    let charts = RwSignal::new("<!-- the server's figures -->".to_owned());
    #[cfg(feature = "hydrate")]
    {
        let timer = StoredValue::new(None::<leptos::leptos_dom::helpers::TimeoutHandle>);
        let latest = StoredValue::new(String::new());
        Effect::watch(
            move || {
                let query = lenient.with(|(s, o, blocked)| {
                    (o.is_some() && blocked.is_empty()).then(|| s.to_query())
                });
                (query, locale.get())
            },
            move |(query, l), _, _| {
                if let Some(t) = timer.get_value() {
                    t.clear();
                }
                let url = query
                    .as_ref()
                    .map(|q| format!("/charts/figures?{q}&lang={}", l.tag()))
                    .unwrap_or_default();
                latest.set_value(url.clone());
                // A refused field takes the charts away at once, with the
                // results: a chart of the previous numbers would read as
                // the current ones.
                if url.is_empty() {
                    charts.set(String::new());
                    return;
                }
                let handle = leptos::leptos_dom::helpers::set_timeout_with_handle(
                    move || {
                        leptos::task::spawn_local(async move {
                            // A slower answer for an older scenario is dropped.
                            if let Some(html) = crate::browser::fetch_text(&url).await {
                                if latest.get_value() == url {
                                    charts.set(html);
                                }
                            }
                        });
                    },
                    std::time::Duration::from_millis(300),
                );
                timer.set_value(handle.ok());
            },
            false,
        );
    }

    // Keep the address bar on the current scenario, without a history entry
    // per keystroke; and keep typed numbers in the new locale's notation.
    #[cfg(feature = "hydrate")]
    {
        Effect::new(move |_| {
            if let Some(h) = href.get() {
                crate::browser::replace_url(&h);
            }
        });
        Effect::watch(
            move || locale.get(),
            move |now, before, _| {
                if let Some(before) = before {
                    if before != now {
                        form.relocalize(*before, *now);
                    }
                }
            },
            false,
        );
    }

    // Restoring the reference scenario discards what was typed: the page
    // asks first, and keeps the typed contract one Back away.
    #[cfg(feature = "hydrate")]
    crate::browser::reload_on_back();
    let reset = move |_| {
        #[cfg(feature = "hydrate")]
        {
            let l = locale.get_untracked();
            let typed = lenient.with_untracked(|(s, _, blocked)| {
                !blocked.is_empty() || s.to_query() != Scenario::default().to_query()
            });
            if typed {
                let ok = crate::browser::confirm(tr(
                    l,
                    "Descartar o contrato digitado e voltar ao cenário de referência? (Voltar, no navegador, traz o contrato de volta.)",
                    "Discard the contract you typed and go back to the reference scenario? (The browser's Back brings the contract back.)",
                ));
                if !ok {
                    return;
                }
                crate::browser::keep_in_history();
            }
        }
        form.reset(locale.get_untracked());
    };
    let t = move |pt: &'static str, en: &'static str| tr(locale.get(), pt, en);
    let sym = move |c: Currency| c.symbol(locale.get()).to_owned();
    let unit_label = move || match form.unit.get() {
        PriceUnit::PerThousand => t("por 1k tokens", "per 1k tokens"),
        PriceUnit::PerMillion => t("por 1M tokens", "per 1M tokens"),
    };
    let price_equivalent = move |f: Field| {
        move || {
            let l = locale.get();
            let unit = form.unit.get();
            let v = form.read(f, l).ok().flatten()?;
            let converted = unit.convert(v)?;
            let other = match unit.other() {
                PriceUnit::PerThousand => tr(l, "por 1k tokens", "per 1k tokens"),
                PriceUnit::PerMillion => tr(l, "por 1M tokens", "per 1M tokens"),
            };
            Some(format!(
                "= {} {other}",
                format_price(converted, l, form.price_currency.get())
            ))
        }
    };
    let needs_rate = move || form.price_currency.get() != form.revenue_currency.get();
    let rate_label = move || {
        let l = locale.get();
        format!(
            "{} — {} 1 = {} ?",
            field_label(Field::Fx, l),
            form.price_currency.get().symbol(l),
            form.revenue_currency.get().symbol(l),
        )
    };
    // The rate as it enters the figures, with its date: what the results
    // and the printout repeat.
    let rate_echo = move || {
        let l = locale.get();
        let rate = form.read(Field::Fx, l).ok().flatten()?;
        let (pc, rc) = (form.price_currency.get(), form.revenue_currency.get());
        // Both ways round: a rate typed the wrong way round reads wrong
        // in one of them (BD 1 = US$ 0,376).
        Some(format!(
            "{} · {}",
            rate_sentence(pc, rc, rate, form.fx_date_iso(l).as_deref(), l),
            rate_inverse(pc, rc, rate, l)?
        ))
    };
    // Why the rate field is empty after a change of currency.
    let dropped_note = move || {
        let l = locale.get();
        let d = form.fx_dropped.get()?;
        let (pc, rc) = (form.price_currency.get(), form.revenue_currency.get());
        if !form.text(Field::Fx).get().trim().is_empty() || (d.from, d.to) == (pc, rc) {
            return None;
        }
        Some(format!(
            "{} {} 1 = {} {} {} {}→{}; {} {} 1 {} {}.",
            tr(l, "A taxa", "The rate"),
            d.from.symbol(l),
            d.to.symbol(l),
            d.rate,
            tr(l, "foi descartada: era do par", "was dropped: it was for"),
            d.from.code(),
            d.to.code(),
            tr(l, "informe quanto vale", "enter what"),
            pc.symbol(l),
            tr(l, "em", "is worth in"),
            rc.symbol(l),
        ))
    };
    // Prices that look quoted per the other unit: said beside them, never
    // blocking (the figures stand as typed). Fixed sentences: the CLI's
    // line gives the numbers, and the wasm carries no formatting for it.
    let unit_warning = move || {
        lenient.with(|(s, o, blocked)| {
            let o = o.as_ref()?;
            let needs = [
                Field::PriceIn,
                Field::PriceCached,
                Field::PriceOut,
                Field::Fx,
                Field::Ticket,
            ];
            if needs.iter().any(|f| blocked.contains(f)) {
                return None;
            }
            idem_core::scenario::unit_warning(s, o)
        })
    };
    // A rate typed the wrong way round, against the reference rates: said
    // beside it, never blocking.
    let rate_inverted = move || {
        lenient.with(|(s, _, blocked)| {
            !blocked.contains(&Field::Fx) && idem_core::scenario::rate_inverted(s)
        })
    };
    // What the price table's warning suggests: the other unit when it
    // would explain the prices, else to check them.
    let unit_hint = move || {
        let per_thousand = form.unit.get() == PriceUnit::PerThousand;
        match unit_warning()? {
            UnitWarning::AboveTable if per_thousand => Some(UnitHint::PerMillion),
            UnitWarning::BelowTable if !per_thousand => Some(UnitHint::PerThousand),
            UnitWarning::AboveTable | UnitWarning::BelowTable => Some(UnitHint::Prices),
            UnitWarning::CallAboveTicket => None,
        }
    };
    // One paragraph says it, whichever the warning: fixed sentences (the
    // CLI's line gives the numbers, and the wasm carries no formatting for
    // it).
    let unit_text = move || {
        let l = locale.get();
        match (unit_hint(), unit_warning()) {
            (Some(UnitHint::PerMillion), _) => tr(
                l,
                "Confira a unidade: estes preços parecem ser por 1M tokens (um passa do maior da tabela de preços dos modelos). Trocar a unidade mantém os números.",
                "Check the unit: these look like prices per 1M tokens (one is above the model price table's largest). Switching the unit keeps the numbers.",
            ),
            (Some(UnitHint::PerThousand), _) => tr(
                l,
                "Confira a unidade: estes preços parecem ser por 1k tokens (um fica abaixo do menor da tabela de preços dos modelos). Trocar a unidade mantém os números.",
                "Check the unit: these look like prices per 1k tokens (one is below the model price table's smallest). Switching the unit keeps the numbers.",
            ),
            (Some(UnitHint::Prices), _) => tr(
                l,
                "Confira os preços: um fica fora da tabela de preços dos modelos.",
                "Check the prices: one is outside the model price table.",
            ),
            (None, Some(_)) => tr(
                l,
                "Confira os preços e a unidade: uma chamada custa mais do que uma conversa traz de receita.",
                "Check the prices and their unit: one call costs more than a conversation brings in.",
            ),
            (None, None) => "",
        }
    };
    let price_suffix =
        Signal::derive(move || format!("{} {}", sym(form.price_currency.get()), unit_label()));
    let revenue_suffix = Signal::derive(move || sym(form.revenue_currency.get()));
    let pct = Signal::derive(|| "%".to_owned());
    let tokens = Signal::derive(move || t("tokens", "tokens").to_owned());
    let none = Signal::derive(String::new);
    let field = move |f: Field, suffix: Signal<String>| {
        view! { <NumberField form field=f suffix/> }
    };
    let currency_select = move |id: &'static str,
                                name: &'static str,
                                signal: RwSignal<Currency>| {
        let price = name == "pc";
        let bad = if price {
            form.bad_price_currency
        } else {
            form.bad_revenue_currency
        };
        // A link's currency that cannot be used is shown as written, chosen,
        // until the person picks one: the select never shows a currency the
        // link did not name. Why is in the server's notice above the form.
        let placeholder = bad.get_untracked();
        view! {
            <select id=id name=name
                aria-invalid=move || (!bad.with(String::is_empty)).then_some("true")
                on:change=move |ev| {
                    let Some(c) = Currency::from_code(&event_target_value(&ev)) else { return };
                    form.set_currency(price, c);
                    if price {
                        form.model.set(None);
                    }
                }>
                {(!placeholder.is_empty()).then(|| view! {
                    <option value="" selected=move || !bad.with(String::is_empty) disabled=true>{format!("{placeholder} ?")}</option>
                })}
                {Currency::all().map(|c| view! {
                    <option value=c.code() selected=move || bad.with(String::is_empty) && signal.get() == c>{move || currency_name(c, locale.get())}</option>
                }).collect_view()}
            </select>
        }
    };
    let model_note = move || {
        let l = locale.get();
        form.model.get().map(|(m, date)| {
            let date = date.unwrap_or_else(|| "?".into());
            format!(
                "{} {m} {} {date} (genai-prices). {}",
                tr(l, "Preços de", "Prices of"),
                tr(l, "na tabela de", "in the table of"),
                tr(
                    l,
                    "Editar um preço desfaz o vínculo com o modelo.",
                    "Editing a price unlinks the model."
                ),
            )
        })
    };
    let picker_href = move || {
        let q = query.get().unwrap_or_else(|| "v=2".to_owned());
        format!(
            "/prices?back={}&lang={}",
            encode_param(&q),
            locale.get().tag()
        )
    };

    let save_disabled = move || query.get().is_none();
    let saved_banner = saved.clone().map(|v| {
        let id = v.id.clone();
        view! {
            <p class="saved-banner" id="saved-banner" hidden=move || unchanged.with(Option::is_none)>
                {move || {
                    let l = locale.get();
                    let name = if v.name.is_empty() { tr(l, "sem nome", "unnamed").to_owned() } else { v.name.clone() };
                    format!(
                        "{} «{name}», {} {}. {}",
                        tr(l, "Cenário salvo", "Saved scenario"),
                        tr(l, "salvo em", "saved on"),
                        crate::i18n::utc_minute(v.created_ms),
                        tr(l, "Editar cria um novo cenário; este link nunca muda.", "Editing makes a new scenario; this link never changes."),
                    )
                }}
                " "
                <code>{format!("/s/{id}")}</code>
            </p>
        }
    });

    // What the server says about the link itself, written once by the
    // server in both languages (CSS shows the page's): where "use these
    // numbers" came from, or why the link is not a scenario. Hydration keeps
    // the server's markup, so none of it is in the wasm.
    let notices = markup.notices.clone();
    view! {
        // Filled in by public/page.js (date, link, saved name); set as inner
        // HTML so hydration leaves what the script wrote.
        <p class="print-meta" id="print-meta" inner_html=String::new()></p>
        <h1><T pt="Quanto custa uma chamada que executa duas vezes" en="What a call that runs twice costs"/></h1>
        {saved_banner}
        <div class="notices bi" inner_html=notices></div>
        <Headline lenient/>
        <form class="calculator" method="get" action="/" on:focusin=move |_| edit_starts()>
            <input type="hidden" name=TYPED_KEY value="1"/>
            <input type="hidden" name="v" value="2"/>
            <input type="hidden" name="lang" value=move || locale.get().tag()/>
            <input type="hidden" name="m" value=move || form.model.get().map(|(m, _)| m).unwrap_or_default()/>
            <input type="hidden" name="md" value=move || form.model.get().and_then(|(_, d)| d).unwrap_or_default()/>
            <fieldset>
                <legend><T pt="Volume" en="Volume"/></legend>
                {field(Field::Conversations, none)}
                {field(Field::Calls, none)}
            </fieldset>
            <fieldset>
                <legend><T pt="Tokens por chamada" en="Tokens per call"/></legend>
                {field(Field::TokensIn, tokens)}
                {field(Field::CachedShare, pct)}
                {field(Field::TokensOut, tokens)}
            </fieldset>
            <fieldset>
                <legend><T pt="Preços dos tokens" en="Token prices"/></legend>
                <div class="field">
                    <label for="in-pc"><T pt="Moeda dos preços" en="Price currency"/></label>
                    {currency_select("in-pc", "pc", form.price_currency)}
                </div>
                <div class="field">
                    <label for="in-u"><T pt="Preços cotados" en="Prices quoted"/></label>
                    <select id="in-u" name="u"
                        on:change=move |ev| {
                            let unit = if event_target_value(&ev) == "1m" { PriceUnit::PerMillion } else { PriceUnit::PerThousand };
                            // Right after a warning that the prices look
                            // quoted per the other unit, the switch is the
                            // fix: the typed numbers are relabelled, never
                            // converted (converting keeps the figures off).
                            let relabel = matches!(
                                unit_hint(),
                                Some(UnitHint::PerMillion | UnitHint::PerThousand)
                            );
                            form.set_unit(unit, relabel, locale.get_untracked());
                        }>
                        <option value="1k" selected=move || form.unit.get() == PriceUnit::PerThousand><T pt="por 1k tokens" en="per 1k tokens"/></option>
                        <option value="1m" selected=move || form.unit.get() == PriceUnit::PerMillion><T pt="por 1M tokens" en="per 1M tokens"/></option>
                    </select>
                </div>
                <NumberField form field=Field::PriceIn suffix=price_suffix hint=Signal::derive(price_equivalent(Field::PriceIn))/>
                <NumberField form field=Field::PriceCached suffix=price_suffix hint=Signal::derive(price_equivalent(Field::PriceCached))/>
                <NumberField form field=Field::PriceOut suffix=price_suffix hint=Signal::derive(price_equivalent(Field::PriceOut))/>
                <p class="hint" id="model-note">{model_note}</p>
                <p class="field-error" id="model-check" inner_html=markup.model.clone()></p>
                <p class="field-warning" id="unit-warning" role="status" hidden=move || unit_warning().is_none()>{unit_text}</p>

                <p><a id="model-picker" rel="external" href=picker_href><T pt="Preencher com os preços de um modelo…" en="Fill in a model's prices…"/></a></p>
            </fieldset>
            <fieldset>
                <legend><T pt="Receita" en="Revenue"/></legend>
                <div class="field">
                    <label for="in-rc"><T pt="Moeda da receita e dos resultados" en="Revenue and results currency"/></label>
                    {currency_select("in-rc", "rc", form.revenue_currency)}
                </div>
                {field(Field::Ticket, revenue_suffix)}
                <Show when=needs_rate>
                    <NumberField form field=Field::Fx suffix=revenue_suffix label=Signal::derive(rate_label)/>
                    <p class="field-error" id="fx-dropped" role="status" hidden=move || dropped_note().is_none()>{dropped_note}</p>
                    <div class="field">
                        <label for="in-pd"><T pt="Data do câmbio" en="Exchange rate date"/></label>
                        <input id="in-pd" name="pd" type="text" inputmode="text" autocomplete="off" maxlength="40"
                            value=form.fx_date.get_untracked()
                            prop:value=move || form.fx_date.get()
                            placeholder=move || t("dd/mm/aaaa", "4 Dec 2026")
                            aria-invalid=move || form.date_problem(locale.get()).is_some().then_some("true")
                            aria-describedby="hint-pd err-pd"
                            on:input=move |ev| form.fx_date.set(event_target_value(&ev))/>
                        <p class="hint" id="hint-pd">{move || t("dd/mm/aaaa, como 04/12/2026", "as in 4 Dec 2026 or 2026-12-04")}</p>
                        <p class="field-error" id="err-pd" hidden=move || form.date_problem(locale.get()).is_none()>{move || form.date_problem(locale.get())}</p>
                        <p class="hint" id="fx-echo" hidden=move || rate_echo().is_none()>{rate_echo}</p>
                        <p class="field-warning" id="fx-inverted" role="status" hidden=move || !rate_inverted()>
                            <T pt="Confira o sentido do câmbio: pelas taxas de referência do BCE, ele parece invertido (compare os dois sentidos acima)."
                               en="Check the rate's direction: against the ECB's reference rates it looks the wrong way round (compare both directions above)."/>
                        </p>
                    </div>
                </Show>
            </fieldset>
            <fieldset>
                <legend><T pt="Duplicatas" en="Duplicates"/></legend>
                {field(Field::DuplicateRate, pct)}
                {field(Field::DupCacheShare, pct)}
                <p class="hint"><T pt="Uma duplicata repete a chamada cuja entrega se repetiu, não a conversa inteira." en="A duplicate repeats the call whose delivery was repeated, not the whole conversation."/></p>
            </fieldset>
            <fieldset class="risk">
                <legend><T pt="Risco financeiro (opcional)" en="Financial risk (optional)"/></legend>
                {field(Field::MoneyShare, pct)}
                {field(Field::AvgCharge, revenue_suffix)}
                {field(Field::OpsCost, revenue_suffix)}
                {field(Field::ClaimRate, pct)}
            </fieldset>
            <div class="actions">
                <noscript><button type="submit"><T pt="Calcular" en="Calculate"/></button></noscript>
                <button type="button" id="reset" on:click=reset><T pt="Restaurar cenário de referência" en="Restore the reference scenario"/></button>
            </div>
        </form>
        <ShareBar href query stale unchanged save_disabled=Signal::derive(save_disabled)/>
        <section class="results" aria-live="polite">
            <h2><T pt="Resultados" en="Results"/></h2>
            {move || {
                let (s, o, blocked) = lenient.get();
                match o {
                    None => view! { <p class="scenario-error" role="alert">{problem_text(Problem::TooLarge, locale.get())}</p> }.into_any(),
                    Some(o) => view! { <Results scenario=s outputs=o blocked/> }.into_any(),
                }
            }}
            <Charts html=charts.into()/>
        </section>
    }
}

/// Link, copy, save, compare and export.
#[component]
pub(crate) fn ShareBar(
    href: Memo<Option<String>>,
    query: Memo<Option<String>>,
    stale: Signal<bool>,
    unchanged: Signal<Option<(String, String)>>,
    save_disabled: Signal<bool>,
) -> impl IntoView {
    let locale = expect_context::<Prefs>().locale;
    let t = move |pt: &'static str, en: &'static str| tr(locale.get(), pt, en);
    let copied = RwSignal::new(None::<bool>);
    let form_token = crate::form_token();
    let copy = move |_| {
        #[cfg(feature = "hydrate")]
        crate::browser::copy_location(copied);
    };
    // With no valid scenario yet the links have no address at all, rather
    // than the reference scenario's.
    let q = move || query.get();
    view! {
        <section class="share" aria-label=move || t("Compartilhar", "Share")>
            {move || stale.get().then(|| view! {
                <p class="stale-note" id="stale-note" role="status">{move || if query.get().is_some() {
                    t("O endereço, o link, Salvar, a comparação e o CSV mantêm o cenário de antes desta edição até você corrigir os campos marcados.",
                      "The address, the link, Save, the comparison and the CSV keep the scenario from before this edit until you fix the marked fields.")
                } else {
                    t("Corrija os campos marcados para ter um link, a comparação e o CSV.",
                      "Fix the marked fields to get a link, the comparison and the CSV.")
                }}</p>
            })}
            <a id="share-link" rel="external" href=move || href.get()>
                <T pt="Link deste cenário" en="Link to this scenario"/>
            </a>
            <button type="button" id="copy-link" on:click=copy><T pt="Copiar link" en="Copy link"/></button>
            <span class="copy-status" role="status">
                {move || copied.get().map(|ok| if ok {
                    t("Link copiado.", "Link copied.")
                } else {
                    t("Não consegui copiar: copie o endereço da barra.", "Could not copy: copy the address bar instead.")
                })}
            </span>
            <form class="save" method="post" action="/s">
                <input type="hidden" name=crate::FORM_FIELD value=form_token/>
                <input type="hidden" name="q" value=move || q().unwrap_or_default()/>
                <input type="hidden" name="lang" value=move || locale.get().tag()/>
                <label for="save-name"><T pt="Nome (opcional)" en="Name (optional)"/></label>
                <input id="save-name" name="name" type="text" maxlength="80" autocomplete="off"/>
                <button type="submit" id="save" disabled=save_disabled><T pt="Salvar cenário" en="Save scenario"/></button>
            </form>
            <a id="compare-link" rel="external" href=move || q().map(|q| match unchanged.get() {
                Some((id, _)) => format!("/compare?s={id}"),
                None => format!("/compare?s={}", encode_param(&q)),
            })>
                <T pt="Comparar com outro cenário" en="Compare with another scenario"/>
            </a>
            <a id="export-csv" rel="external" download=""
                href=move || q().map(|q| {
                    let name = unchanged.get().filter(|(_, n)| !n.is_empty()).map(|(_, n)| format!("&name={}", encode_text(&n))).unwrap_or_default();
                    format!("/export.csv?{q}&lang={}{name}", locale.get().tag())
                })>
                <T pt="Exportar CSV" en="Export CSV"/>
            </a>
        </section>
    }
}

#[component]
pub(crate) fn NumberField(
    form: Form,
    field: Field,
    suffix: Signal<String>,
    #[prop(optional, into)] hint: Option<Signal<Option<String>>>,
    #[prop(optional, into)] label: Option<Signal<String>>,
) -> impl IntoView {
    let locale = expect_context::<Prefs>().locale;
    let help = ServerMarkup::current().help(field);
    let text = form.text(field);
    let id = format!("in-{}", field.key());
    let error = move || {
        let l = locale.get();
        form.read(field, l)
            .err()
            .or_else(|| form.joint_problem(field, l))
    };
    let label = move || match label {
        Some(l) => l.get(),
        None => field_label(field, locale.get()).to_owned(),
    };
    view! {
        <div class="field">
            <label for=id.clone()>{label}</label>
            <div class="input-row">
                <input
                    id=id
                    name=field.key()
                    type="text"
                    inputmode="decimal"
                    autocomplete="off"
                    value=text.get_untracked()
                    prop:value=move || text.get()
                    on:input=move |ev| {
                        text.set(event_target_value(&ev));
                        // A price typed by hand is no longer the table's.
                        if field.in_price_currency() {
                            form.model.set(None);
                        }
                    }
                    aria-invalid=move || if error().is_some() { "true" } else { "false" }
                    aria-describedby=format!("help-{}", field.key())
                />
                <span class="suffix">{move || suffix.get()}</span>
            </div>
            <p class="help bi" id=format!("help-{}", field.key()) inner_html=help></p>
            {move || hint.and_then(|h| h.get()).map(|h| view! { <p class="hint">{h}</p> })}
            {move || error().map(|e| view! { <p class="field-error" role="alert">{e}</p> })}
        </div>
    }
}

/// The outputs the headline repeats, in its order: what the month wastes,
/// its share of revenue, the year's loss, the break-even and, with the risk
/// block, the year's total.
pub const HEADLINE: [&str; 5] = [
    "monthly_token_waste",
    "waste_share_of_revenue_pct",
    "annual_token_waste",
    "break_even_conversations",
    "annual_total_cost",
];

/// The headline: the few numbers a reader came for, above the inputs (kept
/// in view on a wide screen while the inputs scroll, first on a phone and on
/// paper). Same rows, values and refusals as the results below.
#[component]
pub(crate) fn Headline(
    lenient: Memo<(Scenario, Option<CostOutputs>, Vec<Field>)>,
) -> impl IntoView {
    let locale = expect_context::<Prefs>().locale;
    view! {
        <section class="headline" id="headline" aria-label=move || tr(locale.get(), "Resumo", "Summary")>
            {move || {
                let l = locale.get();
                lenient.with(|(s, o, blocked)| {
                    o.as_ref().map(|o| rows(s, o, l)
                        .into_iter()
                        .filter(|r| HEADLINE.contains(&r.key))
                        .map(|r| {
                            let waiting = depends_on(r.key).into_iter().any(|f| blocked.contains(&f));
                            let value = if waiting { "—".to_owned() } else { r.value };
                            view! {
                                <div class="headline-item" data-key=r.key>
                                    <span class="label">{r.label}</span>
                                    <strong id=format!("head-{}", r.key)>{value}</strong>
                                </div>
                            }
                        })
                        .collect_view())
                })
            }}
        </section>
    }
}

#[component]
pub(crate) fn Results(
    scenario: Scenario,
    outputs: CostOutputs,
    blocked: Vec<Field>,
) -> impl IntoView {
    let locale = expect_context::<Prefs>().locale;
    move || {
        let l = locale.get();
        let risk_missing = outputs.risk.is_none();
        let charts_blocked = !blocked.is_empty();
        let i = &scenario.inputs;
        // A refused or missing rate is said as such: the stand-in that
        // lets the other figures show is never echoed as the rate.
        let rate = if blocked.contains(&Field::Fx) {
            // No currency named: one of the pair may be the link's that
            // cannot be used.
            (i.price_currency != i.revenue_currency).then(|| {
                tr(
                    l,
                    "Câmbio: recusado ou ausente — corrija o campo da taxa",
                    "Exchange rate: refused or missing — fix the rate field",
                )
                .to_owned()
            })
        } else {
            i.fx.filter(|_| i.price_currency != i.revenue_currency)
                .map(|fx| {
                    rate_sentence(
                        i.price_currency,
                        i.revenue_currency,
                        fx,
                        scenario.fx_date.as_deref(),
                        l,
                    )
                })
        };
        view! {
            {rate.map(|r| view! { <p class="results-fx" id="results-fx">{r}</p> })}
            <dl class="outputs">
                {rows(&scenario, &outputs, l)
                    .into_iter()
                    .map(|r| {
                        let blockers: Vec<&str> = depends_on(r.key)
                            .into_iter()
                            .filter(|f| blocked.contains(f))
                            .map(|f| field_label(f, l))
                            .collect();
                        let (value, formula) = if blockers.is_empty() {
                            (r.value.clone(), format!("{} = {}", r.formula, r.value))
                        } else {
                            ("—".to_owned(), format!("{}: {}", tr(l, "aguarda o campo", "waiting for"), blockers.join(", ")))
                        };
                        // Every digit, in the page's notation (a point
                        // in "90.006" reads as thousands in Portuguese).
                        let title = parse_canonical(&r.exact)
                            .filter(|_| blockers.is_empty())
                            .map(|d| format!("{}: {}", tr(l, "valor exato", "exact value"), format_decimal(d, l, 0, 28)));
                        view! {
                            <div class="output" data-key=r.key data-blocked=(!blockers.is_empty()).then_some("true")>
                                <dt>{r.label}</dt>
                                <dd>
                                    <span class="value" id=format!("out-{}", r.key) title=title>{value}</span>
                                    <span class="formula">{formula}</span>
                                    {r.note.clone().filter(|_| blockers.is_empty()).map(|n| view! { <span class="note">{n}</span> })}
                                </dd>
                            </div>
                        }
                    })
                    .collect_view()}
            </dl>
            {risk_missing.then(|| view! {
                <p class="note">{tr(l,
                    "Preencha o bloco de risco financeiro para ver cobranças duplicadas, custo operacional e exposição a reclamações.",
                    "Fill in the financial-risk block to see duplicated charges, operational cost and claim exposure.")}</p>
            })}
            {charts_blocked.then(|| view! {
                <p class="note" id="charts-blocked">{tr(l,
                    "Os gráficos voltam quando todos os campos forem válidos.",
                    "The charts come back when every field is valid.")}</p>
            })}
        }
    }
}

/// "Câmbio: £ 1 = R$ 7,35 em 04/12/2026": a rate as the page repeats it,
/// with its date in the page's language (or a word that it has none).
pub(crate) fn rate_sentence(
    from: Currency,
    to: Currency,
    rate: rust_decimal::Decimal,
    date: Option<&str>,
    l: Locale,
) -> String {
    format!(
        "{} {}",
        tr(l, "Câmbio:", "Exchange rate:"),
        rate_value(from, to, rate, date, l)
    )
}

/// What the page suggests when the prices fall outside the price table.
#[derive(Clone, Copy, PartialEq, Eq)]
enum UnitHint {
    /// The prices look quoted per 1M: switch the unit to it.
    PerMillion,
    /// The prices look quoted per 1k.
    PerThousand,
    /// No unit explains them: check the prices.
    Prices,
}

/// "R$ 1 = £ 0,136054": the rate the other way round, to six places
/// under one (0,006173 yen's worth of euro), else to the currency's
/// minor unit and at least two.
pub fn rate_inverse(
    from: Currency,
    to: Currency,
    rate: rust_decimal::Decimal,
    l: Locale,
) -> Option<String> {
    let inverse = rust_decimal::Decimal::ONE.checked_div(rate)?;
    let minor = from.minor_units();
    let places = if inverse < rust_decimal::Decimal::ONE {
        6
    } else {
        minor.max(2)
    };
    Some(one_is(to, from, inverse, places, l))
}

/// "£ 1 = R$ 7,35": one unit of `from` in `to`, to the latter's minor unit
/// and at most `places`.
fn one_is(
    from: Currency,
    to: Currency,
    value: rust_decimal::Decimal,
    places: u32,
    l: Locale,
) -> String {
    let minor = to.minor_units();
    format!(
        "{} = {}",
        idem_core::locale::with_symbol("1".to_owned(), l, from),
        idem_core::locale::with_symbol(
            idem_core::locale::format_decimal(value, l, minor, places.max(minor)),
            l,
            to
        ),
    )
}

/// "£ 1 = R$ 7,35 em 04/12/2026": the rate with its date, as the page, the
/// printout and the CLI write it.
pub fn rate_value(
    from: Currency,
    to: Currency,
    rate: rust_decimal::Decimal,
    date: Option<&str>,
    l: Locale,
) -> String {
    let when = match date {
        Some(d) => format!(
            "{} {}",
            tr(l, "em", "on"),
            idem_core::date::format_date(d, l)
        ),
        None => tr(l, "(sem data)", "(undated)").to_owned(),
    };
    format!("{} {when}", one_is(from, to, rate, 10, l))
}
