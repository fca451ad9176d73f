//! idem-mcp: idem where agents are.
//!
//! Agents call tools over the Model Context Protocol, and a payment tool
//! called twice charges twice: a broken stream makes the client re-issue
//! the call, a re-planned turn calls it again, another agent process calls
//! it too. The gateway ([`gateway::Gateway`]) sits between an agent and an
//! upstream MCP server and makes each guarded tool run once per intent: the
//! first call freezes the intent (the fields its key covers, and the
//! arguments as sent), later calls replay the stored result, and an attempt
//! whose outcome is unknown is uncertain, never executed again under a new
//! key. The guard file ([`guard_file`]) says which tools are guarded and
//! which catalog action's fields make their key. idem's own server
//! ([`tools::IdemTools`]) offers the calculator and the live monitor as
//! tools.

pub mod bind;
pub mod gateway;
pub mod guard_file;
pub mod guarded;
pub mod screen;
pub mod stdio;
pub mod streamable;
pub mod tenant;
pub mod timing;
pub mod tool_args;
pub mod tools;

pub use gateway::{Gateway, StartError};
pub use guard_file::{GuardFile, GuardFileError, Upstream};
pub use tenant::TenantSource;
pub use tools::IdemTools;

// The entry points other crates await (starting and serving a gateway,
// idem's own server) return a `BoxFuture` boxed here, so their state
// machines and the rmcp service code under them are compiled once, in this
// crate: a release build shares no generics across crates, and an `async
// fn` awaited in another crate is compiled again there.
