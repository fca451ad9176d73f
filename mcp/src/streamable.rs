//! MCP over Streamable HTTP, as a Tower service the server mounts: idem's
//! own server at `/mcp`, each gateway at `/mcp/gateways/{name}`.
//!
//! Stateless: every POST is answered on its own (JSON, no session kept),
//! so an idle or abandoned agent holds nothing on the server, and any
//! instance of a deployment can answer any request. The server's own layers
//! check Host (so the transport's own Host list is off), Origin and the
//! bearer token before a request reaches this service.

use crate::{Gateway, IdemTools};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::ServerHandler;
use std::convert::Infallible;
use std::sync::Arc;
use tower::util::BoxCloneSyncService;

/// The largest JSON-RPC message accepted over HTTP, as the API's body bound.
pub const MAX_MESSAGE_BYTES: usize = 64 * 1024;

/// A request as the server's router hands it to a mounted service.
pub type Request = http::Request<axum_core::body::Body>;

/// The transport's answer.
pub type Response = http::Response<http_body_util::combinators::BoxBody<bytes::Bytes, Infallible>>;

/// One MCP route's service, its handler's type erased.
///
/// rmcp's service is generic over its handler, and a release build compiles
/// a generic where it is used, not where it is written: mounting
/// `StreamableHttpService<H, _>` in the API crate compiled rmcp's whole
/// service loop there as well as here. Built by [`own`] and [`gateway`],
/// which are not generic, it is compiled once, in this crate.
pub type Service = BoxCloneSyncService<Request, Response, Infallible>;

/// idem's own server (`/mcp`).
pub fn own(tools: IdemTools) -> Service {
    erased(tools)
}

/// A gateway (`/mcp/gateways/{name}`).
pub fn gateway(gateway: Gateway) -> Service {
    erased(gateway)
}

fn erased<H>(handler: H) -> Service
where
    H: ServerHandler + Clone + Send + Sync + 'static,
{
    let config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(false)
        .with_json_response(true)
        .with_sse_keep_alive(None)
        .with_max_request_body_bytes(MAX_MESSAGE_BYTES)
        .disable_allowed_hosts();
    let service = StreamableHttpService::new(
        move || Ok(handler.clone()),
        Arc::new(LocalSessionManager::default()),
        config,
    );
    BoxCloneSyncService::new(service)
}
