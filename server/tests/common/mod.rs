//! What the HTTP test binaries share: the state around a store, and a
//! server on 127.0.0.1 port 0.

// Each test binary uses its own part of this module.
#![allow(dead_code)]

use idem_core::{Catalog, KeyDeriver, Secret};
use idem_server::live::{LiveAccess, LiveState};
use idem_server::web::{leptos_options, router, serve, ApiParts, ApiState, AppState};
use idem_store::{Options, Store};
use std::sync::Arc;

/// The secret every HTTP test derives with.
pub const SECRET: &[u8] = b"test";

/// Opens and migrates the store at `url` with the built-in catalog.
pub async fn store(url: &str) -> Store {
    let catalog = Arc::new(Catalog::builtin());
    let deriver = Arc::new(KeyDeriver::new(&Secret::new(SECRET.to_vec()).unwrap()));
    let store = Store::connect(url, Options::new(catalog, deriver))
        .await
        .unwrap();
    store.migrate().await.unwrap();
    store
}

/// Serves `store` on 127.0.0.1 port 0; returns the base URL and the state.
pub async fn serve_store(store: &Store) -> (String, AppState) {
    serve_store_with(
        store,
        LiveAccess {
            open: true,
            admin: None,
        },
    )
    .await
}

/// [`serve_store`] with the live monitor's access rule.
pub async fn serve_store_with(store: &Store, access: LiveAccess) -> (String, AppState) {
    let api = ApiState::new(ApiParts {
        store: store.clone(),
        catalog: Arc::new(Catalog::builtin()),
        deriver: Arc::new(KeyDeriver::new(&Secret::new(SECRET.to_vec()).unwrap())),
        metrics: Default::default(),
    });
    let state = AppState {
        leptos_options: leptos_options(Some("127.0.0.1:0")).unwrap(),
        live: LiveState::new(api.clone(), access),
        api,
    };
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(serve(listener, router(state.clone())));
    (base, state)
}
