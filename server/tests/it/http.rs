//! The server through real HTTP on 127.0.0.1, port 0.

use crate::common::{self, TestApp};

use idem_core::{Catalog, KeyDeriver, Secret};

#[tokio::test]
async fn calculator_is_server_rendered_with_the_reference_numbers() {
    let app = TestApp::sqlite().await;
    let base = &app.base;
    let res = reqwest::get(format!("{base}/")).await.unwrap();
    assert_eq!(res.status(), 200);
    let html = res.text().await.unwrap();
    for want in [
        "R$ 0,165",
        "R$ 36.000,00",
        "R$ 148,50",
        "0,41%",
        "R$ 1.782,00",
        ">124<",
        "900 × R$ 0,165 = R$ 148,50",
    ] {
        assert!(html.contains(want), "{want} missing");
    }
    // The hydration script is referenced, so the page comes alive in a browser.
    assert!(html.contains("/pkg/idem.js"));
    // The headline repeats what a reader came for, before the inputs.
    for (key, want) in [
        ("monthly_token_waste", "R$ 148,50"),
        ("waste_share_of_revenue_pct", "0,41%"),
        ("annual_token_waste", "R$ 1.782,00"),
        ("break_even_conversations", "124"),
    ] {
        assert_eq!(element_text(&html, &format!("head-{key}")), want, "{key}");
    }
    assert!(
        !html.contains("id=\"head-annual_total_cost\""),
        "no risk total without the risk block"
    );
    let at = |s: &str| html.find(s).unwrap_or_else(|| panic!("{s} missing"));
    assert!(at("id=\"headline\"") < at("class=\"calculator\""));
}

/// The text of the element with this id, without leptos' hydration markers.
fn element_text(html: &str, id: &str) -> String {
    let open = format!("id=\"{id}\"");
    let start = html.find(&open).unwrap_or_else(|| panic!("no #{id}")) + open.len();
    let start = start + html[start..].find('>').unwrap() + 1;
    let end = start + html[start..].find("</").unwrap();
    let mut text = html[start..end].replace("<!>", "");
    while let Some(a) = text.find("<!--") {
        let b = a + text[a..].find("-->").unwrap() + 3;
        text.replace_range(a..b, "");
    }
    text
}

#[tokio::test]
async fn scenario_in_the_query_renders_and_bad_input_explains_itself() {
    let app = TestApp::sqlite().await;
    let base = &app.base;
    let html = common::page(&format!("{base}/?d=0,5")).await;
    assert!(html.contains("R$ 24,75"), "150 × 0,165");
    let html = common::page(&format!("{base}/?d=150")).await;
    assert!(
        html.contains("no máximo 100"),
        "a rate above 100% explains itself"
    );
    assert!(!without_nonce(&html).contains("NaN"));
    // With the risk block the headline adds the year's total, as the results show it.
    let html = common::page(&format!("{base}/?ms=40&ac=90&oc=15&cr=5")).await;
    let total = element_text(&html, "out-annual_total_cost");
    assert!(total.starts_with("R$ "), "{total}");
    assert_eq!(element_text(&html, "head-annual_total_cost"), total);
}

/// The page without its random script nonce, which can spell "NaN" by chance
/// (a CI run once failed on `…DONaNGl0…`).
fn without_nonce(html: &str) -> String {
    let Some(start) = html.find("nonce=\"").map(|i| i + "nonce=\"".len()) else {
        return html.to_owned();
    };
    let len = html[start..].find('"').unwrap();
    html.replace(&html[start..start + len], "")
}

#[tokio::test]
async fn health_and_readiness() {
    let app = TestApp::sqlite().await;
    let base = &app.base;
    assert_eq!(
        reqwest::get(format!("{base}/healthz"))
            .await
            .unwrap()
            .status(),
        200
    );
    assert_eq!(
        reqwest::get(format!("{base}/readyz"))
            .await
            .unwrap()
            .status(),
        200
    );
}

/// `POST /v1/keys`: bearer auth with the tenant from the token, problem+json errors.
#[tokio::test]
async fn v1_keys_needs_a_token_and_derives_for_its_tenant() {
    let app = TestApp::sqlite().await;
    let (base, store) = (&app.base, &app.store);
    let acme = idem_core::TenantId::try_from("acme").unwrap();
    let token = store.create_tenant(&acme, "ACME").await.unwrap();
    let http = reqwest::Client::new();
    let body = serde_json::json!({
        "action": "pix.cobranca",
        "payload": {"cliente_id": "c-1", "valor": "180.00",
                    "chave_pix_destino": "fulano@example.com", "referencia_intencao": "FAT-1"}
    });
    let url = format!("{base}/v1/keys");

    // No token, a wrong one, a malformed header: 401 with a challenge.
    for auth in [None, Some("Bearer idem_nope"), Some("Basic abc")] {
        let mut req = http.post(&url).json(&body);
        if let Some(a) = auth {
            req = req.header("authorization", a);
        }
        let res = req.send().await.unwrap();
        assert_eq!(res.status(), 401, "{auth:?}");
        assert!(res.headers()["www-authenticate"]
            .to_str()
            .unwrap()
            .starts_with("Bearer realm=\"idem\""));
        assert_eq!(res.headers()["content-type"], "application/problem+json");
        let p: serde_json::Value = res.json().await.unwrap();
        assert_eq!(p["status"], 401);
    }

    let res = http
        .post(&url)
        .bearer_auth(token.expose())
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    let got: serde_json::Value = res.json().await.unwrap();
    let deriver = KeyDeriver::new(&Secret::new(common::SECRET.to_vec()).unwrap());
    let payload_json = body["payload"].to_string();
    let payload = idem_core::Payload::from_json(&payload_json).unwrap();
    let (want, _) = deriver
        .derive_key(&Catalog::builtin(), &acme, "pix.cobranca", &payload, None)
        .unwrap();
    assert_eq!(got["key"], want.as_str(), "derived for the token's tenant");
    assert_eq!(got["rules_version"], 1);

    // Bad input says what to fix, never a 5xx.
    let cases = [
        ("{not json", 400, "application/json"),
        (
            r#"{"action":"pix.estorno","payload":{}}"#,
            422,
            "application/json",
        ),
        (
            r#"{"action":"pix.cobranca","payload":{"valor":"um real"}}"#,
            422,
            "application/json",
        ),
        // The tenant comes from the token only: a tenant field is refused.
        (
            r#"{"action":"pix.cobranca","payload":{},"tenant":"other"}"#,
            422,
            "application/json",
        ),
        (r#"{"action":1,"payload":{}}"#, 422, "application/json"),
        (
            r#"{"action":"pix.cobranca","payload":{}}"#,
            415,
            "text/plain",
        ),
    ];
    for (raw, status, ctype) in cases {
        let res = http
            .post(&url)
            .bearer_auth(token.expose())
            .header("content-type", ctype)
            .body(raw)
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), status, "{raw}");
        assert_eq!(
            res.headers()["content-type"],
            "application/problem+json",
            "{raw}"
        );
        let p: serde_json::Value = res.json().await.unwrap();
        assert!(!p["detail"].as_str().unwrap().is_empty(), "{raw}: {p}");
    }
}

#[tokio::test]
async fn a_usd_contract_renders_with_its_conversion_shown() {
    let app = TestApp::sqlite().await;
    let base = &app.base;
    let html = common::page(&format!(
        "{base}/?v=2&cs=40&cl=1.5&pi=3&pca=0.3&po=15&px=5.33&dcs=80&u=1m&pc=USD&pd=2026-11-30"
    ))
    .await;
    for want in [
        // Money to the cent, unit costs to four places.
        "R$ 75,41",
        "R$ 0,1298",
        "R$ 904,91",
        ">63<",
        // The conversion with the numbers that went in.
        "(8.000 × (60% × US$ 3,00 + 40% × US$ 0,30) + 600 × US$ 15,00) / 1M × 5,33",
    ] {
        assert!(html.contains(want), "{want} missing");
    }
}

/// The issue's pound contract: prices in pounds per 1M, revenue in reais,
/// the rate with its date in the page's language beside the rate and in
/// the results; a symbol typed in a price is read when it is the block's
/// currency and refused naming it otherwise.
#[tokio::test]
async fn a_pound_contract_shows_its_rate_and_date_in_each_language() {
    let app = TestApp::sqlite().await;
    let base = &app.base;
    let link = "v=2&c=40000&ti=9000&cs=60&to=700&cl=2.3&pi=2.40&pca=0.60&po=9.60&px=7.35&tk=3.90&d=2.5&u=1m&pc=GBP&pd=2026-12-04";
    let res = reqwest::get(format!("{base}/?{link}")).await.unwrap();
    assert_eq!(res.status(), 200);
    let html = res.text().await.unwrap();
    for want in [
        "class=\"results-fx\">Câmbio: £ 1 = R$ 7,35 em 04/12/2026<",
        "value=\"04/12/2026\"",
        "<option value=\"GBP\" selected",
        "GBP — Libra esterlina (£)",
        "R$ 208,15",
    ] {
        assert!(html.contains(want), "{want} missing");
    }
    let html = common::page(&format!("{base}/?{link}&lang=en-US")).await;
    for want in [
        "Exchange rate: £1 = R$7.35 on 4 Dec 2026<",
        "value=\"4 Dec 2026\"",
        "GBP — British Pound (£)",
    ] {
        assert!(html.contains(want), "{want} missing");
    }
    // Typed without JavaScript: "£2,40" is the price 2,40; "US$ 3" in
    // the pound block is refused naming the pound, and every figure that
    // does not wait on it still shows.
    let typed = "t=1&v=2&c=40000&ti=9000&cs=60&to=700&cl=2,3&pca=0,60&po=9,60&px=7,35&tk=3,90&d=2,5&u=1m&pc=GBP&rc=BRL&pd=04/12/2026";
    let html = common::page(&format!("{base}/?{typed}&pi=%C2%A32%2C40")).await;
    assert!(html.contains("R$ 208,15"), "the same waste");
    assert!(!html.contains("não é a moeda"), "£ is the block's currency");
    let res = reqwest::get(format!("{base}/?{typed}&pi=US%24%203"))
        .await
        .unwrap();
    assert_eq!(res.status(), 200, "typed values are checked on the page");
    let html = res.text().await.unwrap();
    assert!(
        html.contains("«US$» não é a moeda deste campo: ele está em Libra esterlina (GBP)"),
        "{html}"
    );
    assert!(!html.contains("vírgula"), "no decimal-comma advice");
    assert!(
        html.contains("R$ 156.000,00"),
        "revenue does not wait on a price"
    );
    // A date that reads two ways on the English page: both readings said.
    let html = common::page(&format!(
        "{base}/?t=1&v=2&pc=GBP&px=7.35&pd=04%2F12%2F2026&lang=en-US"
    ))
    .await;
    assert!(html.contains("4 December 2026 or 12 April 2026"), "{html}");
}

#[tokio::test]
async fn a_refused_field_blocks_only_what_depends_on_it() {
    let app = TestApp::sqlite().await;
    let base = &app.base;
    // The ticket is half-typed: the waste does not depend on it, the share
    // of revenue and the break-even do.
    let html = common::page(&format!("{base}/?tk=1,2x")).await;
    assert!(html.contains("R$ 148,50"), "the waste still shows");
    assert!(html.contains("data-key=\"break_even_conversations\" data-blocked=\"true\""));
    assert!(!html.contains("data-key=\"monthly_token_waste\" data-blocked"));
    // No valid scenario yet: the links have no address rather than the
    // reference scenario's.
    assert!(
        !html.contains("href=\"/?v=2\""),
        "no reference link in disguise"
    );
    assert!(html.contains("id=\"stale-note\""));
}

#[tokio::test]
async fn the_model_picker_searches_the_table_on_the_server() {
    let app = TestApp::sqlite().await;
    let base = &app.base;
    let html = common::page(&format!(
        "{base}/prices?q=claude+3-5+sonnet&back=v%3D2%26c%3D1000"
    ))
    .await;
    assert!(html.contains("id=\"price-results\""), "{html}");
    assert!(html.contains(
        "href=\"/?v=2&amp;c=1000&amp;pi=3&amp;pca=0.3&amp;po=15&amp;u=1m&amp;pc=USD&amp;m=anthropic/claude-3-5-sonnet&amp;md="
    ));
    // The site's header, every link keeping the scenario the reader came
    // from, and a table whose every column has a heading (axe).
    for want in [
        "<header class=\"top\">",
        "href=\"/?v=2&amp;c=1000&amp;lang=pt-BR\"",
        "href=\"/compare?s=v%3D2%26c%3D1000&amp;lang=pt-BR\"",
        "href=\"/prices?back=v%3D2%26c%3D1000&amp;q=claude+3-5+sonnet&amp;lang=en-US\"",
    ] {
        assert!(html.contains(want), "{want} missing from {html}");
    }
    assert!(!html.contains("<th scope=\"col\"></th>"), "{html}");
    assert!(
        html.contains("<br><a class=\"use-model\""),
        "the link sits with the model's name: {html}"
    );
    // Following the model's link lands on a working calculator: 200, the
    // prices filled in, and the rate asked for under its field (the model
    // is priced in dollars, the scenario's revenue in reais).
    let start = html.find("<a class=\"use-model\"").unwrap();
    let href = &html[start..];
    let href = &href[href.find("href=\"").unwrap() + 6..];
    let href = href[..href.find('"').unwrap()].replace("&amp;", "&");
    let res = reqwest::get(format!("{base}{href}")).await.unwrap();
    assert_eq!(res.status(), 200, "{href}");
    let landed = res.text().await.unwrap();
    assert!(landed.contains("informe o câmbio"), "{landed}");
    let html = common::page(&format!("{base}/prices?q=zzzz-none")).await;
    assert!(html.contains("Nenhum modelo"));
    // Hostile text in the search and in the scenario it came from: written
    // back as text, never as markup, and the page still answers.
    let res = reqwest::get(format!(
        "{base}/prices?q=%22%3E%3Cscript%3Ealert(1)%3C%2Fscript%3E%00claude&back=v%3D2%26c%3D1%22%3E%3Cimg%20src%3Dx%20onerror%3Dalert(1)%3E"
    ))
    .await
    .unwrap();
    assert_eq!(res.status(), 200);
    let html = res.text().await.unwrap();
    assert!(!html.contains("<script>alert"), "{html}");
    assert!(!html.contains("<img src=x"), "{html}");
    assert!(
        html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"),
        "{html}"
    );
    assert!(reqwest::get(format!("{base}/healthz"))
        .await
        .unwrap()
        .status()
        .is_success());
    // The link it gives keeps the model and its prices, with and without
    // JavaScript: the server renders them.
    let html = common::page(&format!(
        "{base}/?v=2&pi=3&pca=0.3&po=15&u=1m&pc=USD&px=5.33&m=anthropic/claude-3-5-sonnet&md=2026-12-01"
    ))
    .await;
    assert!(
        html.contains("anthropic/claude-3-5-sonnet"),
        "the model is named"
    );
    assert!(html.contains("2026-12-01"));
    assert!(!html.contains("não está na tabela"));
    // A model the table does not have: said under the prices, and the
    // link's own prices still give its numbers.
    let html = common::page(&format!(
        "{base}/?v=2&pi=3&pca=0.3&po=15&u=1m&pc=USD&px=5.33&m=nobody/gone-model&md=2025-01-01"
    ))
    .await;
    assert!(
        html.contains("O modelo «nobody/gone-model» não está na tabela"),
        "{html}"
    );
    assert!(html.contains("R$ 0,1759"));
}

#[tokio::test]
async fn csv_carries_currencies_and_the_legal_caveat_and_refuses_bad_links() {
    let app = TestApp::sqlite().await;
    let base = &app.base;
    let res = reqwest::get(format!(
        "{base}/export.csv?v=2&pi=3&po=15&u=1m&pc=USD&px=5.33&ms=50&ac=180&oc=12.5&cr=2"
    ))
    .await
    .unwrap();
    assert_eq!(res.status(), 200);
    let csv = res.text().await.unwrap();
    assert!(
        csv.contains("input;pc;Moeda dos preços;USD;USD;\n"),
        "{csv}"
    );
    assert!(csv.contains("input;px;Câmbio;5,33;5,33;BRL/USD\n"), "{csv}");
    assert!(
        csv.contains("input;pi;Preço dos tokens de entrada;3;3,00;USD/1M tokens\n"),
        "{csv}"
    );
    assert!(csv.contains("note;monthly_claim_exposure;"), "{csv}");
    assert!(csv.contains("CDC art. 42"), "{csv}");
    for bad in [
        "v=2&pc=XYZ",
        "v=2&pc=USD",
        "v=2&m=a%20b",
        "v=7",
        "v=2&pi=0.00000000001",
    ] {
        let res = reqwest::get(format!("{base}/export.csv?{bad}"))
            .await
            .unwrap();
        assert_eq!(res.status(), 422, "{bad}");
    }
    // A withdrawn currency is refused naming its successor, in the
    // link's language.
    let res = reqwest::get(format!("{base}/export.csv?v=2&rc=HRK&lang=en-US"))
        .await
        .unwrap();
    assert_eq!(res.status(), 422);
    let why = res.text().await.unwrap();
    assert!(
        why.contains("HRK is a withdrawn currency: EUR replaced it on 1 Jan 2023"),
        "{why}"
    );
    // A date that names no day blocks no export and no chart: the rate
    // goes out undated.
    let dated = "v=2&pc=USD&px=5.33&pd=2026-02-31";
    let res = reqwest::get(format!("{base}/export.csv?{dated}"))
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    let csv = res.text().await.unwrap();
    assert!(csv.contains("input;px;Câmbio;5,33;5,33;BRL/USD\n"), "{csv}");
    assert!(!csv.contains("2026-02-31"), "{csv}");
    // Every row whatever its value: the repeated call costs what a call does.
    assert!(csv.contains("output;cost_per_duplicate_call;"), "{csv}");
    // Money inputs in their currency's minor unit: three places for rials,
    // none for won.
    let res = reqwest::get(format!(
        "{base}/export.csv?v=2&pc=OMR&rc=OMR&tk=0.45&pi=0.0011"
    ))
    .await
    .unwrap();
    let csv = res.text().await.unwrap();
    assert!(
        csv.contains("input;tk;Receita por conversa resolvida;0,45;0,450;OMR\n"),
        "{csv}"
    );
    let res = reqwest::get(format!(
        "{base}/export.csv?v=2&pc=KRW&rc=KRW&u=1m&tk=1500&pi=3500"
    ))
    .await
    .unwrap();
    let csv = res.text().await.unwrap();
    assert!(
        csv.contains("input;tk;Receita por conversa resolvida;1500;1.500;KRW\n"),
        "{csv}"
    );
    let res = reqwest::get(format!("{base}/charts/figures?{dated}"))
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
}

/// Every text element of an SVG, trimmed.
fn svg_texts(svg: &str) -> Vec<String> {
    let doc = roxmltree::Document::parse(svg).unwrap();
    assert_eq!(doc.root_element().tag_name().name(), "svg");
    doc.descendants()
        .filter(|n| n.has_tag_name("text"))
        .map(|n| n.text().unwrap_or("").trim().to_owned())
        .collect()
}

#[tokio::test]
async fn each_chart_is_an_image_with_its_own_address() {
    let app = TestApp::sqlite().await;
    let base = &app.base;
    let client = reqwest::Client::new();
    for name in ["loss", "breakdown", "tornado"] {
        let res = client
            .get(format!("{base}/charts/{name}.svg?v=2"))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 200, "{name}");
        assert_eq!(
            res.headers()["content-type"],
            "image/svg+xml; charset=utf-8"
        );
        assert_eq!(res.headers()["cache-control"], "public, max-age=86400");
        assert!(res.headers().contains_key("etag"));
        let texts = svg_texts(&res.text().await.unwrap());
        assert!(!texts.is_empty(), "{name}");
        assert!(texts.iter().all(|t| !t.contains("NaN")), "{name}");
    }
    // The reference scenario's loss chart marks R$ 1.782,00 at 3%, with
    // pt-BR axis labels; English labels with ?lang=en-US.
    let texts = svg_texts(&common::page(&format!("{base}/charts/loss.svg?v=2")).await);
    assert!(
        texts.contains(&"você: R$ 1.782,00 (3,00%)".to_owned()),
        "{texts:?}"
    );
    assert!(
        texts.contains(&"10,00%".to_owned()) && texts.contains(&"R$ 6.000".to_owned()),
        "the curve tops at R$ 5.940, the axis at the next round tick: {texts:?}"
    );
    let svg = common::page(&format!("{base}/charts/loss.svg?v=2&d=6&lang=en-US")).await;
    assert!(svg_texts(&svg).contains(&"you: R$3,564.00 (6.00%)".to_owned()));
    // PNG: the same chart from the bitmap backend, at the width asked for.
    for path in [
        "/charts/loss.svg?v=2&format=png&width=800",
        "/charts/tornado.png?v=2&width=800",
    ] {
        let res = client.get(format!("{base}{path}")).send().await.unwrap();
        assert_eq!(res.status(), 200, "{path}");
        assert_eq!(res.headers()["content-type"], "image/png");
        let png = res.bytes().await.unwrap();
        assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
        // IHDR: width, big-endian, at byte 16.
        assert_eq!(
            u32::from_be_bytes([png[16], png[17], png[18], png[19]]),
            800
        );
    }
    for bad in [
        "format=png&width=99999",
        "format=png&width=abc",
        "format=gif",
        "width=800",
    ] {
        let res = client
            .get(format!("{base}/charts/loss.svg?v=2&{bad}"))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 422, "{bad}");
    }
    // The same scenario gets the same tag, and a revalidation is a 304.
    let res = client
        .get(format!("{base}/charts/loss.svg?v=2"))
        .send()
        .await
        .unwrap();
    let etag = res.headers()["etag"].clone();
    let again = client
        .get(format!("{base}/charts/loss.svg?v=1"))
        .header("if-none-match", etag.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(again.status(), 304);
    let other = client
        .get(format!("{base}/charts/loss.svg?v=2&lang=en-US"))
        .header("if-none-match", etag)
        .send()
        .await
        .unwrap();
    assert_eq!(other.status(), 200, "another language, another drawing");
    // Unknown chart: 404; a scenario the calculator refuses: 422 with its words.
    let res = client
        .get(format!("{base}/charts/pie.svg?v=2"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 404);
    let res = client
        .get(format!("{base}/charts/loss.svg?v=2&d=150"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 422);
    assert!(res.text().await.unwrap().contains("no máximo 100"));
    let res = client
        .get(format!(
            "{base}/charts/loss.svg?v=2&c=99999999999999999999999999"
        ))
        .send()
        .await
        .unwrap();
    assert!(
        res.status() == 422 || res.status() == 200,
        "huge input never a 5xx"
    );
}

#[tokio::test]
async fn the_calculator_fetches_its_chart_figures_from_the_server() {
    let app = TestApp::sqlite().await;
    let base = &app.base;
    let res = reqwest::get(format!("{base}/charts/figures?v=2&d=6&lang=en-US"))
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    assert_eq!(res.headers()["content-type"], "text/html; charset=utf-8");
    assert!(res.headers().contains_key("etag"));
    let html = res.text().await.unwrap();
    for name in ["loss", "breakdown", "tornado"] {
        assert!(
            html.contains(&format!(
                "<img src=\"/charts/{name}.svg?v=2&amp;d=6&amp;lang=en-US\""
            )),
            "{name}: {html}"
        );
    }
    assert!(html.contains("Copy image link") && html.contains("<table>"));
    assert!(
        html.contains("6.00% duplicates cost R$3,564.00 a year"),
        "{html}"
    );
    let res = reqwest::get(format!("{base}/charts/figures?v=2&d=150"))
        .await
        .unwrap();
    assert_eq!(res.status(), 422);
    assert!(res.text().await.unwrap().contains("no máximo 100"));
}

#[tokio::test]
async fn saved_and_compared_scenarios_have_chart_addresses_too() {
    let app = TestApp::sqlite().await;
    let base = &app.base;
    let client = &app.http;
    let location = app.save_scenario("v=2&d=6", "Seis por cento").await;
    let id = location.trim_start_matches("/s/").to_owned();
    // A saved scenario's chart: the same drawing as its link, cached for good.
    let res = client
        .get(format!("{base}/charts/loss.svg?s={id}"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    assert_eq!(
        res.headers()["cache-control"],
        "public, max-age=31536000, immutable"
    );
    assert!(svg_texts(&res.text().await.unwrap()).contains(&"você: R$ 3.564,00 (6,00%)".to_owned()));
    let res = client
        .get(format!("{base}/charts/loss.svg?s=000000000000"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 404);
    // The comparison's chart: one bar per scenario, under its saved name.
    let res = client
        .get(format!(
            "{base}/charts/compare.svg?s=v%3D2&s={id}&s=v%3D2%26d%3D0"
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    let texts = svg_texts(&res.text().await.unwrap());
    for want in ["Seis por cento", "R$ 1.782,00", "R$ 3.564,00", "R$ 0,00"] {
        assert!(texts.contains(&want.to_owned()), "{want} in {texts:?}");
    }
    let res = client
        .get(format!("{base}/charts/compare.svg"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 422);
    // The compare page shows that chart, with its copy and download controls.
    let html = common::page(&format!("{base}/compare?s=v%3D2&s={id}")).await;
    assert!(html.contains("id=\"chart-compare\""), "{html}");
    assert!(
        html.contains(&format!(
            "<img src=\"/charts/compare.svg?s=v%3D2&amp;s={id}&amp;lang=pt-BR\""
        )),
        "{html}"
    );
}

#[tokio::test]
async fn a_link_that_is_not_a_scenario_gets_422_and_says_why() {
    let app = TestApp::sqlite().await;
    let base = &app.base;
    for (link, why) in [("/?v=2&pc=XYZ", "XYZ"), ("/?v=9", "version")] {
        let res = reqwest::get(format!("{base}{link}")).await.unwrap();
        assert_eq!(res.status(), 422, "{link}");
        let html = res.text().await.unwrap();
        assert!(html.contains("id=\"link-error\""), "{link}");
        assert!(html.contains(why), "{link}: {why}");
    }
    // A rate's date that names no day is said under the date, in the
    // page's language, and every figure still shows: (8,000 × 0.015 +
    // 600 × 0.075) / 1k × 5.33 = R$ 0,87945 a call.
    for (lang, why) in [("", "esse dia não existe"), ("&lang=en-US", "no such day")] {
        let link = format!("/?v=2&pc=USD&px=5.33&pd=2026-02-30{lang}");
        let res = reqwest::get(format!("{base}{link}")).await.unwrap();
        assert_eq!(res.status(), 422, "{link}");
        let html = res.text().await.unwrap();
        assert!(!html.contains("id=\"link-error\""), "{link}: {html}");
        assert!(html.contains(why), "{link}: {why}");
        assert!(html.contains("0,8795") || html.contains("0.8795"), "{html}");
    }
    // The Brazilian form reads; a date without a rate labels nothing.
    for link in ["/?v=2&pc=USD&px=5.33&pd=01/12/2026", "/?v=2&pd=2026-02-30"] {
        let res = reqwest::get(format!("{base}{link}")).await.unwrap();
        assert_eq!(res.status(), 200, "{link}");
    }
    // A field's problem shows under the field, with 422 too.
    let res = reqwest::get(format!("{base}/?v=2&d=150")).await.unwrap();
    assert_eq!(res.status(), 422);
    assert!(res.text().await.unwrap().contains("no máximo 100"));
    // Good links, and forms typed without JavaScript, are 200.
    for link in ["/", "/?v=1&d=0.5", "/?v=2&d=0.5", "/?t=1&d=0%2C5"] {
        let res = reqwest::get(format!("{base}{link}")).await.unwrap();
        assert_eq!(res.status(), 200, "{link}");
    }
}

#[tokio::test]
async fn text_responses_are_compressed_when_the_client_asks() {
    let app = TestApp::sqlite().await;
    let base = &app.base;
    let client = reqwest::Client::new();
    for path in [
        "/",
        "/charts/loss.svg?v=2",
        "/export.csv?v=2",
        "/prices?q=claude",
    ] {
        let identity = client.get(format!("{base}{path}")).send().await.unwrap();
        assert!(
            identity.headers().get("content-encoding").is_none(),
            "{path}"
        );
        let plain = identity.bytes().await.unwrap().len();
        for enc in ["br", "gzip"] {
            let res = client
                .get(format!("{base}{path}"))
                .header("accept-encoding", enc)
                .send()
                .await
                .unwrap();
            assert_eq!(res.status(), 200, "{path}");
            assert_eq!(res.headers()["content-encoding"], enc, "{path}");
            let sent = res.bytes().await.unwrap().len();
            assert!(sent * 2 < plain, "{path} {enc}: {sent} of {plain} bytes");
        }
    }
}

#[tokio::test]
async fn answers_that_fit_one_segment_go_uncompressed_even_when_asked() {
    // httpx and Node's fetch ask for gzip on every call: compressing a
    // guarded effect's few hundred bytes cost both ends a compressor.
    let app = TestApp::sqlite().await;
    let base = &app.base;
    let token = common::tenant(&app.store, "gz").await;
    let token = token.as_str();
    let client = reqwest::Client::new();
    let payload = serde_json::json!({
        "cliente_id": "c-1", "valor": "180.00",
        "chave_pix_destino": "fulano@example.com", "referencia_intencao": "gz-1"
    });
    let res = client
        .post(format!("{base}/v1/intents"))
        .bearer_auth(token)
        .header("accept-encoding", "gzip, deflate, br")
        .json(&serde_json::json!({"action": "pix.cobranca", "payload": payload, "claim": {"lease_ms": 30000}}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 201);
    assert!(res.headers().get("content-encoding").is_none());
    let doc: serde_json::Value = res.json().await.unwrap();
    let res = client
        .post(format!(
            "{base}/v1/actions/{}/complete",
            doc["key"].as_str().unwrap()
        ))
        .bearer_auth(token)
        .header("accept-encoding", "gzip")
        .json(&serde_json::json!({"token": doc["claim"]["token"], "response": {"ok": true}}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    assert!(res.headers().get("content-encoding").is_none());
    // A problem document too; a large answer is still compressed.
    let res = client
        .get(format!("{base}/v1/actions/{}", "0".repeat(64)))
        .bearer_auth(token)
        .header("accept-encoding", "gzip")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 404);
    assert!(res.headers().get("content-encoding").is_none());
    let res = client
        .get(format!("{base}/v1/openapi.json"))
        .header("accept-encoding", "gzip")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    assert_eq!(res.headers()["content-encoding"], "gzip");
}

#[tokio::test]
async fn a_comparison_is_saved_under_one_short_link() {
    let app = TestApp::sqlite().await;
    let base = &app.base;
    let client = &app.http;
    let scenario = app.save_scenario("v=2&d=6", "Seis por cento").await;
    let id = scenario.trim_start_matches("/s/");
    // The columns as the compare page posts them: a saved id and a link,
    // which is stored in its canonical spelling.
    let save = |name: &'static str, columns: Vec<String>| {
        let mut form: Vec<(String, String)> =
            columns.into_iter().map(|v| ("s".into(), v)).collect();
        form.push(("name".into(), name.into()));
        form.push(("lang".into(), "pt-BR".into()));
        client.post(format!("{base}/c")).form(&form).send()
    };
    let res = save("antes e depois", vec![id.to_owned(), "/?d=0&v=2".into()])
        .await
        .unwrap();
    assert_eq!(res.status(), 303);
    let link = res.headers()["location"].to_str().unwrap().to_owned();
    assert!(link.starts_with("/c/") && link.len() == 15, "{link}");
    // Saving the same again lands on the same link.
    let again = save("antes e depois", vec![id.to_owned(), "v=2&d=0".into()])
        .await
        .unwrap();
    assert_eq!(again.headers()["location"].to_str().unwrap(), link);
    let html = common::page(&format!("{base}{link}")).await;
    assert!(html.contains("Comparação salva «antes e depois»"), "{html}");
    assert!(
        html.contains(">Seis por cento</a>"),
        "the saved scenario's name heads its column"
    );
    assert!(html.contains("id=\"compare-table\""));
    assert!(html.contains("R$ 3.564,00"), "the saved scenario's numbers");
    assert!(html.contains("Com idem: «Cenário B»"), "{html}");
    // Unknown ids are 404; a column that names no scenario is refused.
    let res = client
        .get(format!("{base}/c/000000000000"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 404);
    let res = save("", vec!["https://example.com/x".into()])
        .await
        .unwrap();
    assert_eq!(res.status(), 422);
    assert!(res
        .text()
        .await
        .unwrap()
        .contains("not an idem scenario link"));
    let res = save("", vec![]).await.unwrap();
    assert_eq!(res.status(), 422);
}

/// A cell as a spreadsheet of that locale reads it: a pt-BR sheet takes `.`
/// as the thousands separator and `,` as the decimal mark (so `0.075` would
/// be seventy-five), an English sheet the reverse. `None`: the sheet keeps
/// the cell as text.
fn sheet_number(cell: &str, pt_br: bool) -> Option<rust_decimal::Decimal> {
    let (group, decimal) = if pt_br { ('.', ',') } else { (',', '.') };
    if cell.matches(decimal).count() > 1 {
        return None;
    }
    let plain: String = cell
        .chars()
        .filter(|c| *c != group)
        .map(|c| if c == decimal { '.' } else { c })
        .collect();
    plain.parse().ok()
}

#[tokio::test]
async fn every_contract_of_the_corpus_reads_exact_in_both_csv_dialects() {
    let app = TestApp::sqlite().await;
    let base = &app.base;
    let corpus = common::contracts();
    assert!(corpus.len() >= 10);
    for c in &corpus {
        let name = c["name"].as_str().unwrap();
        let link = c["link"].as_str().unwrap();
        for (lang, pt_br) in [("pt-BR", true), ("en-US", false)] {
            let res = reqwest::get(format!("{base}/export.csv?{link}&lang={lang}"))
                .await
                .unwrap();
            assert_eq!(res.status(), 200, "{name} {lang}");
            let body = res.text().await.unwrap();
            // The dialect a spreadsheet of the locale opens in columns.
            let text = if pt_br {
                body.strip_prefix('\u{feff}')
                    .unwrap_or_else(|| panic!("{name}: pt-BR starts with a BOM"))
            } else {
                assert!(!body.starts_with('\u{feff}'));
                body.as_str()
            };
            let mut reader = csv::ReaderBuilder::new()
                .delimiter(if pt_br { b';' } else { b',' })
                .from_reader(text.as_bytes());
            let mut outputs = std::collections::HashMap::new();
            for rec in reader.records() {
                let rec = rec.unwrap();
                assert_eq!(rec.len(), 6, "{name} {lang}: {rec:?}");
                match &rec[0] {
                    // Every typed value reads back as the link's number.
                    "input" => {
                        let Some(want) = link
                            .split('&')
                            .filter_map(|kv| kv.split_once('='))
                            .find(|(k, _)| *k == &rec[1])
                            .map(|(_, v)| v)
                        else {
                            continue;
                        };
                        if let Ok(want) = want.parse::<rust_decimal::Decimal>() {
                            assert_eq!(
                                sheet_number(&rec[3], pt_br),
                                Some(want),
                                "{name} {lang}: input {} is {:?}",
                                &rec[1],
                                &rec[3]
                            );
                        }
                    }
                    "output" => {
                        outputs.insert(rec[1].to_owned(), (rec[3].to_owned(), rec[4].to_owned()));
                    }
                    _ => {}
                }
            }
            let shown = c["shown_pt_BR"].as_object().unwrap();
            for (key, pt) in shown {
                let (value, formatted) = outputs
                    .get(key)
                    .unwrap_or_else(|| panic!("{name} {lang}: no {key} in\n{body}"));
                let pt = pt.as_str().unwrap();
                let want_formatted = if pt_br {
                    pt.to_owned()
                } else {
                    common::shown_in_english(c, key, pt)
                };
                assert_eq!(formatted, &want_formatted, "{name} {lang}: {key}");
                match c["exact"][key].as_str() {
                    None => assert_eq!(value, "", "{name} {lang}: {key}"),
                    Some(want) => {
                        let got = sheet_number(value, pt_br).unwrap_or_else(|| {
                            panic!("{name} {lang}: {key} {value:?} reads as text")
                        });
                        let want: rust_decimal::Decimal = want.parse().unwrap();
                        assert_eq!(
                            got.round_dp(10),
                            want.round_dp(10),
                            "{name} {lang}: {key} {value:?}"
                        );
                    }
                }
            }
        }
    }
}

/// Every page answers from its own route, with its own status and body;
/// any other path is the not-found page, in the visitor's language, with
/// the script nonce every page carries.
#[tokio::test]
async fn every_page_answers_from_its_route_with_its_status() {
    let app = TestApp::sqlite().await;
    let base = &app.base;
    let c = reqwest::Client::new();
    for (path, status, text) in [
        ("/", 200, "R$ 148,50"),
        ("/?v=9", 422, "link-error"),
        ("/s/zzzzzzzzzz", 404, "Cenário não encontrado"),
        ("/s/%FF%FE", 404, "Cenário não encontrado"),
        ("/compare", 200, "Comparar cenários"),
        ("/c/zzzzzzzzzz", 404, "Comparar cenários"),
        ("/prices", 200, "genai-prices"),
        ("/live", 200, "live-page"),
        ("/live/actions/not-a-key", 404, "live-page"),
        ("/live/actions/%FF", 404, "live-page"),
        ("/no/such/page", 404, "Página não encontrada"),
        ("/no/such/page?lang=en-US", 404, "Page not found"),
    ] {
        let res = c.get(format!("{base}{path}")).send().await.unwrap();
        assert_eq!(res.status(), status, "{path}");
        let csp = res.headers()["content-security-policy"]
            .to_str()
            .unwrap()
            .to_owned();
        let html = res.text().await.unwrap();
        assert!(html.contains(text), "{path}: {text} missing from {html}");
        let nonce = csp
            .split("'nonce-")
            .nth(1)
            .unwrap()
            .split('\'')
            .next()
            .unwrap();
        // The Leptos pages carry the hydration script, inline, with the
        // nonce (the price list is the server's alone, and has none).
        let inline: Vec<&str> = html
            .split("<script")
            .skip(1)
            .map(|tag| tag.split('>').next().unwrap())
            .filter(|open| !open.contains("src="))
            .collect();
        assert_eq!(inline.is_empty(), path == "/prices", "{path}: {inline:?}");
        for open in inline {
            assert!(
                open.contains(&format!("nonce=\"{nonce}\"")),
                "{path}: {open}"
            );
        }
    }
    // The language a link asks for is kept, on every page.
    let res = c
        .get(format!("{base}/no/such/page?lang=en-US"))
        .send()
        .await
        .unwrap();
    let cookie = res.headers()["set-cookie"].to_str().unwrap().to_owned();
    assert!(cookie.starts_with("idem_lang=en-US"), "{cookie}");
}
