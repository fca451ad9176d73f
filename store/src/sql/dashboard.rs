//! The dashboard's tables: saved scenarios and comparisons, the demo provider's ledger, the conformance fixture.

statements! {
    HERE;

    /// The conformance fixture's echo: one row per execution.
    pub const INSERT_FIXTURE_ECHO: &str = "\
insert into fixture_echoes (tenant_id, bytes, created_ms)
values ($1, $2, $3)";

    /// Writes one executed demo charge into its ledger.
    pub const INSERT_DEMO_CHARGE: &str = "\
insert into demo_charges (tenant_id, charge_id, amount_cents, currency, customer, created_ms)
values ($1, $2, $3, $4, $5, $6)";

    /// How many charges the demo provider executed for a tenant.
    pub const COUNT_DEMO_CHARGES: &str = "\
select count(*) as n from demo_charges
where tenant_id = $1";

    /// Every charge the demo provider executed for a tenant (the simulator
    /// compares them with what each conversation asked for).
    pub const LIST_DEMO_CHARGES: &str = "\
select charge_id, amount_cents, currency, customer, created_ms from demo_charges
where tenant_id = $1
order by created_ms, charge_id";

    /// Saves a dashboard scenario. The id is derived from the content, so a
    /// conflict means this very scenario was saved before: keep that row.
    pub const INSERT_SCENARIO: &str = "\
insert into scenarios (tenant_id, scenario_id, name, query, created_ms)
values ($1, $2, $3, $4, $5)
on conflict (tenant_id, scenario_id) do nothing";

    /// One saved scenario.
    pub const SELECT_SCENARIO: &str = "\
select scenario_id, name, query, created_ms from scenarios
where tenant_id = $1 and scenario_id = $2";

    /// Saves a dashboard comparison; as with scenarios, a conflict means
    /// this very comparison was saved before: keep that row.
    pub const INSERT_COMPARISON: &str = "\
insert into comparisons (tenant_id, comparison_id, name, query, created_ms)
values ($1, $2, $3, $4, $5)
on conflict (tenant_id, comparison_id) do nothing";

    /// One saved comparison.
    pub const SELECT_COMPARISON: &str = "\
select comparison_id, name, query, created_ms from comparisons
where tenant_id = $1 and comparison_id = $2";
}

/// What PostgreSQL runs: the statements above, and its own text where its
/// dialect needs one.
pub mod pg {
    pub use super::*;
}

/// What SQLite runs: the statements above, and its own text where its
/// dialect needs one.
pub mod sqlite {
    pub use super::*;
}
