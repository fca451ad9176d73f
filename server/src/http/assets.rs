//! The site's own files: the wasm, its JavaScript, the stylesheet, the
//! plain scripts and the icon. A leaf: it imports nothing else of `http`.
//!
//! They are read once at start and compressed once, in the background,
//! with brotli at its best quality and gzip at its best level: the
//! per-request compressor runs at a quality fast enough for dynamic pages
//! (brotli 4), which left the wasm about 15% bigger on the wire than it needs
//! to be (docs/PERFORMANCE.md). Until a file's compressed copies are ready
//! it goes out as it is and the router's compression layer handles it.
//!
//! Caching: the build's JavaScript, wasm and stylesheet are also served
//! under a name carrying a digest of their content
//! (`/pkg/idem.<digest>.wasm`). The pages link those names, which never
//! change meaning, so browsers keep them for a year without asking again
//! (`immutable`). Every file, under its plain name too, carries a strong
//! `ETag`; the plain names are revalidated on each use (`no-cache`), so an
//! unchanged file costs a `304` without a body.

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::io::Write;
use std::path::Path;
use std::sync::{Arc, OnceLock};

/// Files above this size are left to the static file handler: the table
/// holds the site's own build output, not whatever else lands in its root.
const MAX_FILE: u64 = 16 << 20;

/// How long a fingerprinted file may be kept: a year, the most browsers
/// honour, and `immutable` so a reload does not revalidate it.
const IMMUTABLE: &str = "public, max-age=31536000, immutable";

/// The plain names: kept, but checked with the server on every use.
const REVALIDATE: &str = "no-cache";

struct Asset {
    body: Bytes,
    content_type: &'static str,
    /// The digest of `body`: the identity copy's validator, and with
    /// `-br` or `-gz` the compressed copies'.
    digest: String,
    /// Filled once, by [`AssetTable::compress`].
    br: OnceLock<Option<Bytes>>,
    gzip: OnceLock<Option<Bytes>>,
    compressible: bool,
}

/// One file under one name: the fingerprinted name is cached for good.
#[derive(Clone)]
struct Served {
    asset: Arc<Asset>,
    immutable: bool,
}

/// The site's files by the paths they answer, as the router holds them.
#[derive(Clone, Default)]
pub struct AssetTable {
    by_path: Arc<HashMap<String, Served>>,
    version: Option<String>,
    all: Arc<Vec<Arc<Asset>>>,
}

impl AssetTable {
    /// Reads every file under `site_root` (recursively) and routes it under
    /// its plain path. When `pkg_dir` holds the build's `<output_name>.js`,
    /// `.wasm` and `.css`, their combined digest is the build's version, and
    /// the three are also routed under `<output_name>.<version>.<ext>` (the
    /// wasm under `…_bg.wasm` too, the name leptos asks for when the server
    /// was not built by cargo-leptos). A missing root is an empty table
    /// (tests and the API alone run without a built site).
    pub fn load(site_root: &Path, pkg_dir: &str, output_name: &str) -> Self {
        let mut files = HashMap::new();
        for entry in walkdir::WalkDir::new(site_root)
            .max_depth(4)
            .into_iter()
            .filter_map(Result::ok)
            .filter(|e| e.file_type().is_file())
        {
            let Ok(meta) = entry.metadata() else { continue };
            if meta.len() > MAX_FILE {
                continue;
            }
            let Ok(rel) = entry.path().strip_prefix(site_root) else {
                continue;
            };
            let Some(rel) = rel.to_str() else { continue };
            let Ok(body) = std::fs::read(entry.path()) else {
                continue;
            };
            let (content_type, compressible) = kind(rel);
            let digest = hex::encode(&Sha256::digest(&body)[..12]);
            files.insert(
                format!("/{}", rel.replace('\\', "/")),
                Arc::new(Asset {
                    body: Bytes::from(body),
                    content_type,
                    digest,
                    br: OnceLock::new(),
                    gzip: OnceLock::new(),
                    compressible,
                }),
            );
        }
        let build: Vec<_> = ["js", "wasm", "css"]
            .iter()
            .map(|ext| files.get(&format!("/{pkg_dir}/{output_name}.{ext}")))
            .collect();
        let version = if build.iter().all(Option::is_some) {
            let mut h = Sha256::new();
            for a in build.into_iter().flatten() {
                h.update(a.digest.as_bytes());
            }
            Some(hex::encode(&h.finalize()[..8]))
        } else {
            None
        };
        let mut by_path = HashMap::new();
        // Smallest first: [`compress`](Self::compress) goes in this order,
        // so the small files have their copies (and validators) at once, and
        // once the wasm has its copies every file has.
        let mut all: Vec<_> = files.values().cloned().collect();
        all.sort_by_key(|a| a.body.len());
        for (path, asset) in &files {
            by_path.insert(
                path.clone(),
                Served {
                    asset: asset.clone(),
                    immutable: false,
                },
            );
        }
        if let Some(v) = &version {
            for (ext, names) in [
                ("js", &["js"][..]),
                ("css", &["css"][..]),
                ("wasm", &["wasm", "_bg.wasm"][..]),
            ] {
                let Some(asset) = files.get(&format!("/{pkg_dir}/{output_name}.{ext}")) else {
                    continue;
                };
                for name in names {
                    let dot = if name.starts_with('_') { "" } else { "." };
                    by_path.insert(
                        format!("/{pkg_dir}/{output_name}.{v}{dot}{name}"),
                        Served {
                            asset: asset.clone(),
                            immutable: true,
                        },
                    );
                }
            }
        }
        Self {
            by_path: Arc::new(by_path),
            version,
            all: Arc::new(all),
        }
    }

    /// The paths to route here.
    pub fn paths(&self) -> impl Iterator<Item = &str> {
        self.by_path.keys().map(String::as_str)
    }

    /// The digest the build's file names carry, when the build is there.
    pub fn version(&self) -> Option<&str> {
        self.version.as_deref()
    }

    /// Compresses every compressible file once (brotli quality 11 with a
    /// 16 MB window, gzip level 9), keeping a copy only when it is smaller.
    /// Seconds of CPU for the wasm: run it on a blocking thread.
    pub fn compress(&self) {
        for a in self.all.iter() {
            if !a.compressible {
                let _ = a.br.set(None);
                let _ = a.gzip.set(None);
                continue;
            }
            let smaller = |c: Vec<u8>| (c.len() < a.body.len()).then(|| Bytes::from(c));
            a.br.get_or_init(|| brotli_best(&a.body).and_then(smaller));
            a.gzip.get_or_init(|| gzip_best(&a.body).and_then(smaller));
        }
    }

    /// Whether every compressed copy is made.
    pub fn compressed(&self) -> bool {
        self.all
            .iter()
            .all(|a| a.br.get().is_some() && a.gzip.get().is_some())
    }
}

fn brotli_best(data: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(data.len() / 3);
    {
        // Quality 11, window 2^24: the smallest brotli output; browsers
        // decode any window up to 2^24.
        let mut w = brotli::CompressorWriter::new(&mut out, 64 << 10, 11, 24);
        w.write_all(data).ok()?;
        w.flush().ok()?;
    }
    Some(out)
}

fn gzip_best(data: &[u8]) -> Option<Vec<u8>> {
    let mut w = flate2::write::GzEncoder::new(
        Vec::with_capacity(data.len() / 3),
        flate2::Compression::best(),
    );
    w.write_all(data).ok()?;
    w.finish().ok()
}

/// The content type by extension, and whether compressing it pays.
fn kind(path: &str) -> (&'static str, bool) {
    match path.rsplit('.').next().unwrap_or("") {
        "wasm" => ("application/wasm", true),
        "js" | "mjs" => ("text/javascript; charset=utf-8", true),
        "css" => ("text/css; charset=utf-8", true),
        "html" => ("text/html; charset=utf-8", true),
        "json" | "map" => ("application/json", true),
        "svg" => ("image/svg+xml", true),
        "txt" => ("text/plain; charset=utf-8", true),
        "ico" => ("image/x-icon", true),
        "png" => ("image/png", false),
        "woff2" => ("font/woff2", false),
        _ => ("application/octet-stream", false),
    }
}

/// Whether the request accepts `coding` (by name, not refused with `q=0`).
fn accepts(headers: &HeaderMap, coding: &str) -> bool {
    list(headers, header::ACCEPT_ENCODING).any(|item| {
        let mut parts = item.split(';');
        let name = parts.next().unwrap_or("").trim();
        // "q=0" refuses a coding outright.
        let refused = parts.any(|p| {
            p.trim()
                .strip_prefix("q=")
                .and_then(|q| q.trim().parse::<f32>().ok())
                .is_some_and(|q| q <= 0.0)
        });
        name.eq_ignore_ascii_case(coding) && !refused
    })
}

/// Whether `If-None-Match` names `etag` (or is `*`).
fn not_modified(headers: &HeaderMap, etag: &str) -> bool {
    list(headers, header::IF_NONE_MATCH)
        .map(|t| t.trim().trim_start_matches("W/"))
        .any(|t| t == "*" || t == etag)
}

/// The items of a comma-separated header, over all its lines.
fn list(headers: &HeaderMap, name: header::HeaderName) -> impl Iterator<Item = &str> {
    headers
        .get_all(name)
        .into_iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
}

/// Serves one file of the table: the best copy the client accepts, with
/// its validator and the caching its name allows.
pub async fn serve(State(table): State<AssetTable>, uri: Uri, headers: HeaderMap) -> Response {
    let Some(served) = table.by_path.get(uri.path()) else {
        return StatusCode::NOT_FOUND.into_response();
    };
    let a = &served.asset;
    let br = a.br.get().cloned().flatten();
    let gzip = a.gzip.get().cloned().flatten();
    let (body, coding, suffix) = match (br, gzip) {
        (Some(b), _) if accepts(&headers, "br") => (b, Some("br"), "-br"),
        (_, Some(g)) if accepts(&headers, "gzip") => (g, Some("gzip"), "-gz"),
        _ => (a.body.clone(), None, ""),
    };
    // Before its copies are made, a compressible file goes out whole and
    // the compression layer may encode it on the way: no strong validator
    // then, as it would name two different bodies.
    let validated = coding.is_some() || !a.compressible || a.br.get().is_some();
    let etag = format!("\"{}{suffix}\"", a.digest);
    let cache = if served.immutable {
        IMMUTABLE
    } else {
        REVALIDATE
    };
    let mut out = HeaderMap::new();
    out.insert(header::CACHE_CONTROL, HeaderValue::from_static(cache));
    out.insert(header::VARY, HeaderValue::from_static("accept-encoding"));
    if validated {
        if let Ok(v) = HeaderValue::from_str(&etag) {
            out.insert(header::ETAG, v);
        }
    }
    if validated && not_modified(&headers, &etag) {
        return (StatusCode::NOT_MODIFIED, out).into_response();
    }
    out.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(a.content_type),
    );
    if let Some(c) = coding {
        out.insert(header::CONTENT_ENCODING, HeaderValue::from_static(c));
    }
    (out, Body::from(body)).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn site() -> tempfile::TempDir {
        let dir = tempfile::tempdir().expect("temp dir");
        let pkg = dir.path().join("pkg");
        std::fs::create_dir(&pkg).expect("pkg dir");
        let js = "export default function init() {}\n".repeat(50);
        std::fs::write(pkg.join("idem.js"), js).expect("write");
        std::fs::write(pkg.join("idem.wasm"), vec![0u8; 4096]).expect("write");
        std::fs::write(pkg.join("idem.css"), "body { margin: 0 }\n".repeat(40)).expect("write");
        std::fs::write(dir.path().join("favicon.png"), [137u8, 80, 78, 71]).expect("write");
        dir
    }

    #[test]
    fn the_version_follows_the_builds_content() {
        let dir = site();
        let a = AssetTable::load(dir.path(), "pkg", "idem");
        let v = a.version().expect("a version").to_owned();
        assert_eq!(v.len(), 16);
        std::fs::write(dir.path().join("pkg/idem.wasm"), vec![1u8; 4096]).expect("write");
        let b = AssetTable::load(dir.path(), "pkg", "idem");
        assert_ne!(b.version(), Some(v.as_str()));
        // Without the whole build there is no version, and no fingerprinted names.
        std::fs::remove_file(dir.path().join("pkg/idem.css")).expect("rm");
        let t = AssetTable::load(dir.path(), "pkg", "idem");
        assert_eq!(t.version(), None);
        let mut paths: Vec<_> = t.paths().collect();
        paths.sort_unstable();
        assert_eq!(paths, ["/favicon.png", "/pkg/idem.js", "/pkg/idem.wasm"]);
    }

    #[test]
    fn every_build_file_gets_its_fingerprinted_names() {
        let dir = site();
        let t = AssetTable::load(dir.path(), "pkg", "idem");
        let v = t.version().expect("a version").to_owned();
        for p in [
            format!("/pkg/idem.{v}.js"),
            format!("/pkg/idem.{v}.css"),
            format!("/pkg/idem.{v}.wasm"),
            format!("/pkg/idem.{v}_bg.wasm"),
        ] {
            assert!(t.by_path.get(&p).is_some_and(|s| s.immutable), "{p}");
        }
        assert!(t
            .by_path
            .get("/pkg/idem.wasm")
            .is_some_and(|s| !s.immutable));
    }

    #[test]
    fn compressed_copies_decode_to_the_file_and_only_pay_their_way() {
        let dir = site();
        let t = AssetTable::load(dir.path(), "pkg", "idem");
        assert!(!t.compressed());
        t.compress();
        assert!(t.compressed());
        let js = &t.by_path["/pkg/idem.js"].asset;
        let br = js.br.get().cloned().flatten().expect("a brotli copy");
        let mut back = Vec::new();
        brotli::BrotliDecompress(&mut &br[..], &mut back).expect("decodes");
        assert_eq!(back, js.body);
        let gz = js.gzip.get().cloned().flatten().expect("a gzip copy");
        let mut back = Vec::new();
        std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&gz[..]), &mut back)
            .expect("decodes");
        assert_eq!(back, js.body);
        // A PNG is not compressed again.
        let png = &t.by_path["/favicon.png"].asset;
        assert_eq!(png.br.get(), Some(&None));
    }

    #[test]
    fn accept_encoding_is_read_with_its_weights() {
        let h = |v: &str| {
            let mut m = HeaderMap::new();
            m.insert(
                header::ACCEPT_ENCODING,
                HeaderValue::from_str(v).expect("header"),
            );
            m
        };
        assert!(accepts(&h("gzip, deflate, br, zstd"), "br"));
        assert!(accepts(&h("BR;q=0.5"), "br"));
        assert!(!accepts(&h("gzip, br;q=0"), "br"));
        assert!(!accepts(&h("gzip"), "br"));
        assert!(!accepts(&HeaderMap::new(), "gzip"));
        let mut m = HeaderMap::new();
        m.insert(
            header::IF_NONE_MATCH,
            HeaderValue::from_static("\"a\", W/\"b-br\""),
        );
        assert!(not_modified(&m, "\"b-br\""));
        assert!(!not_modified(&m, "\"b\""));
    }
}
