//! MCP over Streamable HTTP, as a Tower service the server mounts: idem's
//! own server at `/mcp`, each gateway at `/mcp/gateways/{name}`.
//!
//! Stateless: every POST is answered on its own (JSON, no session kept),
//! so an idle or abandoned agent holds nothing on the server, and any
//! instance of a deployment can answer any request. The server's own layers
//! check Host (so the transport's own Host list is off), Origin and the
//! bearer token before a request reaches this service.

use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::ServerHandler;
use std::sync::Arc;

/// The largest JSON-RPC message accepted over HTTP, as the API's body bound.
pub const MAX_MESSAGE_BYTES: usize = 64 * 1024;

/// `handler` as a Streamable HTTP service.
pub fn service<H>(handler: H) -> StreamableHttpService<H, LocalSessionManager>
where
    H: ServerHandler + Clone + Send + Sync + 'static,
{
    let config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(false)
        .with_json_response(true)
        .with_sse_keep_alive(None)
        .with_max_request_body_bytes(MAX_MESSAGE_BYTES)
        .disable_allowed_hosts();
    StreamableHttpService::new(
        move || Ok(handler.clone()),
        Arc::new(LocalSessionManager::default()),
        config,
    )
}
