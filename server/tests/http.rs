//! The server through real HTTP on 127.0.0.1, port 0.

#![allow(clippy::unwrap_used)] // tests fail loudly by design

mod common;

use idem_core::{Catalog, KeyDeriver, Secret};

async fn start() -> (String, tempfile::TempDir) {
    let (base, dir, _) = start_with_store().await;
    (base, dir)
}

async fn start_with_store() -> (String, tempfile::TempDir, idem_store::Store) {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("idem.db").display());
    let (base, state) = common::serve(&url, &common::test_clock()).await;
    (base, dir, state.api.store.clone())
}

#[tokio::test]
async fn calculator_is_server_rendered_with_the_reference_numbers() {
    let (base, _dir) = start().await;
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
}

#[tokio::test]
async fn scenario_in_the_query_renders_and_bad_input_explains_itself() {
    let (base, _dir) = start().await;
    let html = common::page(&format!("{base}/?d=0,5")).await;
    assert!(html.contains("R$ 24,75"), "150 × 0,165");
    let html = common::page(&format!("{base}/?d=150")).await;
    assert!(
        html.contains("no máximo 100"),
        "a rate above 100% explains itself"
    );
    assert!(!without_nonce(&html).contains("NaN"));
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
    let (base, _dir) = start().await;
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
    let (base, _dir, store) = start_with_store().await;
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
