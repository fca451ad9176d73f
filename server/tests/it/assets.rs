//! The site's files through real HTTP: the pages link the build under names
//! carrying its digest, those names are cached for good, every copy has a
//! validator, and the compressed copies decode to the file.
//!
//! The server runs as a child `idem serve`, pointed at a site of its own
//! through its environment (the other tests of this binary share theirs).

use crate::common;

use reqwest::header::{
    ACCEPT_ENCODING, CACHE_CONTROL, CONTENT_ENCODING, CONTENT_TYPE, ETAG, IF_NONE_MATCH,
};
use reqwest::StatusCode;
use std::io::Read;
use std::time::{Duration, Instant};

/// A site like the build's: a JavaScript glue, a wasm, a stylesheet (all
/// compressible), a plain script and an icon.
fn site() -> (tempfile::TempDir, Vec<u8>) {
    let dir = tempfile::tempdir().unwrap();
    let pkg = dir.path().join("pkg");
    std::fs::create_dir(&pkg).unwrap();
    // Compressible but not trivially: a repeating sequence with variation.
    let wasm: Vec<u8> = (0..300_000u32)
        .map(|i| u8::try_from((i * 7 + i / 1000) % 251).unwrap())
        .collect();
    std::fs::write(pkg.join("idem.wasm"), &wasm).unwrap();
    std::fs::write(
        pkg.join("idem.js"),
        "export function hydrate() { return 1; }\n".repeat(200),
    )
    .unwrap();
    std::fs::write(
        pkg.join("idem.css"),
        "main { display: grid; }\n".repeat(200),
    )
    .unwrap();
    std::fs::write(
        dir.path().join("page.js"),
        "document.querySelectorAll('[data-copy-text]');\n".repeat(20),
    )
    .unwrap();
    (dir, wasm)
}

fn unbrotli(b: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    brotli::Decompressor::new(b, 4096)
        .read_to_end(&mut out)
        .unwrap();
    out
}

fn ungzip(b: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(b)
        .read_to_end(&mut out)
        .unwrap();
    out
}

#[tokio::test]
async fn the_build_is_fingerprinted_cached_for_good_and_compressed_once() {
    let (dir, wasm) = site();
    let data = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}/idem.db", data.path().display());
    let root = dir.path().display().to_string();
    let server = common::child_serve(
        &url,
        &[],
        &[
            ("LEPTOS_SITE_ROOT", root.as_str()),
            ("LEPTOS_SITE_PKG_DIR", "pkg"),
            ("LEPTOS_OUTPUT_NAME", "idem"),
        ],
    )
    .await;
    let base = server.base.clone();
    // No automatic decompression: the test reads what travels.
    let http = reqwest::Client::new();

    // The page links the build's three files by their digest.
    let html = common::page(&format!("{base}/")).await;
    let re = regex::Regex::new(r#"/pkg/idem\.([0-9a-f]{16})\.js""#).unwrap();
    let v = re.captures(&html).expect("a fingerprinted script")[1].to_owned();
    assert!(html.contains(&format!("/pkg/idem.{v}.css\"")), "{html}");
    let wasm_path = [
        format!("/pkg/idem.{v}.wasm"),
        format!("/pkg/idem.{v}_bg.wasm"),
    ]
    .into_iter()
    .find(|p| html.contains(&format!("{p}\"")))
    .expect("a fingerprinted wasm");
    // So does the model price page (server markup of its own).
    let prices = common::page(&format!("{base}/prices")).await;
    assert!(prices.contains(&format!("/pkg/idem.{v}.css\"")));

    // Brotli, once the copies are made in the background (the wasm, the
    // largest file, last: every other file has its copies by then).
    let start = Instant::now();
    let br = loop {
        let r = http
            .get(format!("{base}{wasm_path}"))
            .header(ACCEPT_ENCODING, "gzip, deflate, br")
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::OK);
        // Until then it goes out whole, with no validator.
        let etag = r
            .headers()
            .get(ETAG)
            .map(|t| t.to_str().unwrap().to_owned());
        if etag.is_some_and(|t| t.ends_with("-br\"")) {
            break r;
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "never compressed"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(br.headers()[CONTENT_ENCODING], "br");
    assert_eq!(br.headers()[CONTENT_TYPE], "application/wasm");
    assert_eq!(
        br.headers()[CACHE_CONTROL],
        "public, max-age=31536000, immutable"
    );
    assert_eq!(br.headers()["vary"], "accept-encoding");
    let body = br.bytes().await.unwrap();
    assert!(body.len() < wasm.len() / 2, "{} bytes", body.len());
    assert_eq!(unbrotli(&body), wasm);

    // gzip for a client without brotli; the whole file for one without either.
    // Each file's gzip copy is made after its brotli one: waited for too.
    let gz = loop {
        let r = http
            .get(format!("{base}{wasm_path}"))
            .header(ACCEPT_ENCODING, "gzip, br;q=0")
            .send()
            .await
            .unwrap();
        let tag = r
            .headers()
            .get(ETAG)
            .map(|t| t.to_str().unwrap().to_owned());
        if tag.is_some_and(|t| t.ends_with("-gz\"")) {
            break r;
        }
        assert!(start.elapsed() < Duration::from_secs(60), "never gzipped");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(gz.headers()[CONTENT_ENCODING], "gzip");
    let gz_tag = gz.headers()[ETAG].to_str().unwrap().to_owned();
    assert!(gz_tag.ends_with("-gz\""), "{gz_tag}");
    assert_eq!(ungzip(&gz.bytes().await.unwrap()), wasm);
    let plain = http.get(format!("{base}{wasm_path}")).send().await.unwrap();
    assert!(plain.headers().get(CONTENT_ENCODING).is_none());
    assert_eq!(plain.bytes().await.unwrap(), wasm);

    // The plain name: the same file, revalidated on each use, and a 304
    // without a body when it has not changed.
    let r = http
        .get(format!("{base}/pkg/idem.wasm"))
        .header(ACCEPT_ENCODING, "br")
        .send()
        .await
        .unwrap();
    assert_eq!(r.headers()[CACHE_CONTROL], "no-cache");
    let tag = r.headers()[ETAG].clone();
    assert_eq!(unbrotli(&r.bytes().await.unwrap()), wasm);
    let again = http
        .get(format!("{base}/pkg/idem.wasm"))
        .header(ACCEPT_ENCODING, "br")
        .header(IF_NONE_MATCH, tag.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(again.status(), StatusCode::NOT_MODIFIED);
    assert_eq!(again.headers()[ETAG], tag);
    assert!(again.bytes().await.unwrap().is_empty());
    // Another copy's validator is another representation: the whole answer.
    let other = http
        .get(format!("{base}/pkg/idem.wasm"))
        .header(ACCEPT_ENCODING, "br")
        .header(IF_NONE_MATCH, gz_tag)
        .send()
        .await
        .unwrap();
    assert_eq!(other.status(), StatusCode::OK);

    // The plain scripts have validators too.
    let page_js = http.get(format!("{base}/page.js")).send().await.unwrap();
    assert_eq!(page_js.status(), StatusCode::OK);
    assert_eq!(
        page_js.headers()[CONTENT_TYPE],
        "text/javascript; charset=utf-8"
    );
    assert!(page_js.headers().get(ETAG).is_some());

    // A digest that is not the build's is not served.
    let stale = http
        .get(format!("{base}/pkg/idem.0123456789abcdef.js"))
        .send()
        .await
        .unwrap();
    assert_eq!(stale.status(), StatusCode::NOT_FOUND);
}
