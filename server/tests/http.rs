//! The server through real HTTP on 127.0.0.1, port 0.

#![allow(clippy::unwrap_used)] // tests fail loudly by design

use idem_core::{Catalog, KeyDeriver, Secret};
use idem_server::web::{leptos_options, router, serve, AppState};
use std::sync::Arc;

async fn start() -> (String, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let catalog = Arc::new(Catalog::builtin());
    let deriver = Arc::new(KeyDeriver::new(&Secret::new(b"test".to_vec()).unwrap()));
    let url = format!("sqlite://{}", dir.path().join("idem.db").display());
    let options = idem_store::Options::new(catalog.clone(), deriver.clone());
    let store = idem_store::Store::connect(&url, options).await.unwrap();
    store.migrate().await.unwrap();
    let state = AppState {
        leptos_options: leptos_options(Some("127.0.0.1:0")).unwrap(),
        store,
        catalog,
        deriver,
    };
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(serve(listener, router(state)));
    (base, dir)
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
    let html = reqwest::get(format!("{base}/?d=0,5"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(html.contains("R$ 24,75"), "150 × 0,165");
    let html = reqwest::get(format!("{base}/?d=150"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        html.contains("above 100"),
        "a rate above 100% explains itself"
    );
    assert!(!html.contains("NaN"));
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
