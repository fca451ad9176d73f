//! The `idem` commands. `main.rs` parses the command line into [`Cli`] and
//! hands it to [`run`].

pub mod admin;
pub mod alert;
pub mod args;
pub mod audit;
pub mod broker;
pub mod cost;
pub mod key;
pub mod mcp;
pub mod options;
pub mod prices;
pub mod sim_model;
pub mod sim_worker;
pub mod simulate;
pub mod webhook;

pub use args::Cli;
use args::{
    AlertCommand, Command, KeyCommand, McpCommand, ServeArgs, StatsCommand, TenantCommand,
    WebhookCommand,
};
use std::process::ExitCode;

/// Runs the command `cli` names.
pub fn run(cli: Cli) -> ExitCode {
    match cli.command {
        Command::Key {
            command: KeyCommand::Derive(args),
        } => key::run(&args),
        Command::Cost(args) => cost::run(&args),
        Command::Prices(args) => prices::run(&args),
        Command::Audit(args) => audit::run(&args),
        Command::Simulate(args) => {
            crate::telemetry::init_tracing();
            simulate::run(&args)
        }
        Command::SimulateWorker => sim_worker::run(),
        Command::Serve(args) => {
            let otlp = args.trace.otlp_endpoint.clone();
            run_traced(serve(args), otlp.as_ref())
        }
        Command::Migrate(args) => run_async(admin::migrate(args)),
        Command::Purge(args) => run_async(admin::purge(args)),
        Command::Retention(args) => run_async(admin::retention(args)),
        Command::Mcp { command } => match command {
            McpCommand::Gateway(args) => {
                let otlp = args.trace.otlp_endpoint.clone();
                run_traced(mcp::gateway(args), otlp.as_ref())
            }
            McpCommand::Serve(args) => run_async(mcp::serve(args)),
        },
        Command::Tenant { command } => match command {
            TenantCommand::Create(args) => run_async(admin::tenant_create(args)),
            TenantCommand::RotateToken(args) => run_async(admin::tenant_rotate(args)),
            TenantCommand::Disable(args) => run_async(admin::tenant_disable(args, true)),
            TenantCommand::Enable(args) => run_async(admin::tenant_disable(args, false)),
            TenantCommand::List(args) => run_async(admin::tenant_list(args)),
        },
        Command::Stats {
            command: StatsCommand::Rebuild(args),
        } => run_async(admin::stats_rebuild(args)),
        Command::Alert { command } => match command {
            AlertCommand::Add(args) => run_async(alert::add(args)),
            AlertCommand::List(args) => run_async(alert::list(args)),
            AlertCommand::Remove(args) => run_async(alert::remove(args)),
        },
        Command::Webhook { command } => match command {
            WebhookCommand::Add(args) => run_async(webhook::add(args)),
            WebhookCommand::List(args) => run_async(webhook::list(args)),
            WebhookCommand::Remove(args) => run_async(webhook::remove(args)),
        },
        Command::Relay(args) => run_async(webhook::relay(args)),
    }
}

/// `idem serve`: build the application from the options and serve it.
async fn serve(args: ServeArgs) -> anyhow::Result<()> {
    let app = crate::startup::Application::build(args.into_config()?).await?;
    app.run_until_stopped().await
}

/// The multi-threaded runtime the async commands run on; says why when it
/// cannot start.
pub(crate) fn runtime() -> Option<tokio::runtime::Runtime> {
    match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => Some(rt),
        Err(e) => {
            eprintln!("error: cannot start the runtime: {e}");
            None
        }
    }
}

fn run_async(fut: impl std::future::Future<Output = anyhow::Result<()>>) -> ExitCode {
    run_traced(fut, None)
}

/// [`run_async`], exporting traces to `otlp` when given. The spans still
/// queued are sent after the runtime has stopped.
fn run_traced(
    fut: impl std::future::Future<Output = anyhow::Result<()>>,
    otlp: Option<&crate::telemetry::OtlpEndpoint>,
) -> ExitCode {
    let _telemetry = crate::telemetry::init(otlp);
    let Some(rt) = runtime() else {
        return ExitCode::FAILURE;
    };
    let result = rt.block_on(fut);
    drop(rt);
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            if e.is::<Usage>() || e.is::<crate::startup::Misconfigured>() {
                ExitCode::from(2)
            } else {
                ExitCode::FAILURE
            }
        }
    }
}

/// Bad input found after parsing (a URL, a topic list, an unknown id): the
/// command exits 2, as clap does for malformed options, with this message.
#[derive(Debug)]
pub(crate) struct Usage(pub String);

impl std::fmt::Display for Usage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Usage {}
