//! Every SQL statement idem runs, one constant per query, in one module
//! per concern (beside the queries that run them, `crate::backend`). Both backends
//! accept `$n` placeholders (sqlx numbers SQLite's `$n` by its digits), so a
//! statement is written once unless a dialect needs its own text.
//!
//! Each statement filters by exactly one tenant (`tenant_id = $1`), so a
//! distributed Postgres routes it to one shard. The few admin statements that
//! span tenants are listed by [`admin_statements`]; a unit test holds both rules.

/// The condition of an action that is not settled: started (lease running
/// or not), uncertain, or failed but retryable. Written once, because the
/// partial index `actions_unsettled` (migration 0009) is used only by a
/// query whose condition is this very text; a unit test holds them equal.
macro_rules! unsettled {
    () => {
        "not (state = 'completed' or reconciled or (state = 'failed' and retryable is not true))"
    };
}

/// The statistics journal's counters, in the order the journal statements
/// of both backends write and return them and `fold_in` reads them.
macro_rules! journal_counts {
    () => {
        "intents, deliveries, redeliveries, redelivered_intents,
    divergences, corrections, actions_started, actions_completed, actions_failed,
    actions_uncertain, http_replays, http_409, http_422, delay_max_ms, delay_le_ms,
    delay_count"
    };
}

/// The tenants with rows in one table, by a loose index scan: one probe of
/// the tenant-led index per tenant instead of a pass over every row.
macro_rules! tenants_sql {
    ($table:literal) => {
        concat!(
            "with recursive t (tenant_id) as (
    select min(tenant_id) from ",
            $table,
            "
    union all
    select (select min(tenant_id) from ",
            $table,
            " where tenant_id > t.tenant_id)
    from t where t.tenant_id is not null)
select tenant_id from t where tenant_id is not null"
        )
    };
}

/// Declares SQL statements and, beside them, the list of what it declared
/// (`$list`, name and text): [`all`] reads the lists, so a statement cannot
/// be declared and left out of the tenancy checks.
macro_rules! statements {
    ($list:ident; $( $(#[$attr:meta])* pub const $name:ident: &str = $sql:expr; )*) => {
        $( $(#[$attr])* pub const $name: &str = $sql; )*
        /// Every statement declared beside this list, by name.
        pub const $list: &[(&str, &str)] = &[$((stringify!($name), $name)),*];
    };
}

pub mod actions;
pub mod admin;
pub mod alerts;
pub mod dashboard;
pub mod events;
pub mod http_keys;
pub mod intents;
pub mod live;
pub mod mcp;
pub mod stats;
pub mod webhooks;

/// Every statement that is not scoped to one tenant.
pub fn admin_statements() -> impl Iterator<Item = &'static str> {
    [
        stats::ADMIN_TOTALS,
        admin::LIST_TENANTS,
        admin::pg::PROBE_BOUND,
        admin::sqlite::PROBE_BOUND,
        admin::TENANT_LIST,
        admin::SESSION_TENANTS,
        admin::ADMIN_UNRESOLVED,
        stats::JOURNAL_TENANTS,
        webhooks::WEBHOOK_TENANTS,
        alerts::ALERT_TENANTS,
        webhooks::ADMIN_WEBHOOKS,
        mcp::ADMIN_MCP_CALLS,
    ]
    .into_iter()
    .chain(admin::TENANTS_IN_TABLES)
}

/// Every statement, by concern and name (`webhooks::pg::` for a backend's
/// own): each `statements!` block lists what it declares, so no statement
/// can be left out of the tenancy checks.
pub fn all() -> impl Iterator<Item = (String, &'static str)> {
    let listed = |module: &'static str, list: &'static [(&'static str, &'static str)]| {
        list.iter()
            .map(move |(name, sql)| (format!("{module}{name}"), *sql))
    };
    listed("intents::", intents::HERE)
        .chain(listed("intents::pg::", intents::pg::HERE))
        .chain(listed("intents::sqlite::", intents::sqlite::HERE))
        .chain(listed("intents::", intents::COALESCED))
        .chain(listed("actions::", actions::HERE))
        .chain(listed("http_keys::", http_keys::HERE))
        .chain(listed("events::", events::HERE))
        .chain(listed("webhooks::", webhooks::HERE))
        .chain(listed("webhooks::pg::", webhooks::pg::HERE))
        .chain(listed("webhooks::sqlite::", webhooks::sqlite::HERE))
        .chain(listed("webhooks::", webhooks::ADMIN))
        .chain(listed("stats::", stats::HERE))
        .chain(listed("stats::pg::", stats::pg::HERE))
        .chain(listed("stats::sqlite::", stats::sqlite::HERE))
        .chain(listed("stats::", stats::ADMIN))
        .chain(listed("alerts::", alerts::HERE))
        .chain(listed("alerts::", alerts::ADMIN))
        .chain(listed("live::", live::HERE))
        .chain(listed("admin::", admin::HERE))
        .chain(listed("admin::", admin::ADMIN))
        .chain(listed("admin::pg::", admin::pg::HERE))
        .chain(listed("admin::sqlite::", admin::sqlite::HERE))
        .chain(listed("dashboard::", dashboard::HERE))
        .chain(listed("mcp::", mcp::HERE))
        .chain(listed("mcp::", mcp::ADMIN))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A statement is tenant-scoped when it filters on `tenant_id = $1` or,
    /// for an insert, writes `$1` into tenant_id and conflicts on a key
    /// that starts with it.
    fn scoped(sql: &str) -> bool {
        // Comments are prose: only the statement's own words count.
        let code: String = sql
            .lines()
            .map(|l| l.split("--").next().unwrap_or_default())
            .collect::<Vec<_>>()
            .join(" ");
        let flat = code.split_whitespace().collect::<Vec<_>>().join(" ");
        // A DO UPDATE ... WHERE tests the one conflicting row, which the
        // conflict target already pinned to the tenant.
        let head = flat.split(" on conflict ").next().unwrap_or_default();
        // Every where clause, including subqueries', names the tenant.
        let wheres = head.matches(" where ").count();
        let filtered = wheres == head.matches("where tenant_id = $1").count();
        if flat.starts_with("with ") && !flat.starts_with("with recursive") {
            // A CTE: every insert writes $1 as its tenant, every conflict
            // target leads with tenant_id, and any where clause names the
            // tenant (the CTE's own rows need none); one without inserts
            // filters every table it reads or updates.
            let inserts = flat.matches("insert into ").count();
            let conflicts = flat.matches("on conflict (").count();
            let all_wheres = flat.matches(" where ").count();
            if inserts == 0 {
                return all_wheres > 0
                    && all_wheres == flat.matches("where tenant_id = $1").count();
            }
            return inserts == flat.matches("select $1,").count()
                && conflicts == flat.matches("on conflict (tenant_id").count()
                && all_wheres == flat.matches("where tenant_id = $1").count();
        }
        if flat.starts_with("insert into") {
            let writes_tenant = flat.contains("(tenant_id,")
                && (flat.contains("values ($1,")
                    || flat.contains("select $1,")
                    || (wheres > 0 && flat.contains("select tenant_id,")));
            let conflict_ok =
                !flat.contains("on conflict") || flat.contains("on conflict (tenant_id");
            return writes_tenant && conflict_ok && filtered;
        }
        wheres > 0 && filtered
    }

    #[test]
    fn every_statement_is_tenant_scoped_except_admin() {
        let admin: Vec<&str> = admin_statements().collect();
        for (name, sql) in all() {
            if admin.contains(&sql) {
                continue;
            }
            assert!(scoped(sql), "{name} is not scoped to one tenant:\n{sql}");
        }
        for sql in admin {
            assert!(
                !scoped(sql),
                "an admin statement is listed that is scoped:\n{sql}"
            );
        }
    }

    /// The stored tables, read off the migrations of both backends.
    fn stored_tables() -> std::collections::BTreeSet<String> {
        let mut tables = std::collections::BTreeSet::new();
        for dir in ["sqlite", "postgres"] {
            let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../migrations")
                .join(dir);
            for f in std::fs::read_dir(dir).unwrap() {
                let text = std::fs::read_to_string(f.unwrap().path()).unwrap();
                let flat = text.to_lowercase();
                for part in flat.split("create table ").skip(1) {
                    let name: String = part
                        .trim_start_matches("if not exists ")
                        .chars()
                        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                        .collect();
                    tables.insert(name);
                }
            }
        }
        tables
    }

    /// Each reference to a stored table in a statement (`from T`, `join T`,
    /// `update T`, `insert into T`, `delete from T`).
    fn table_refs<'a>(flat: &str, tables: &'a std::collections::BTreeSet<String>) -> Vec<&'a str> {
        let words: Vec<&str> = flat.split([' ', '(', ')', ',']).collect();
        let mut refs = Vec::new();
        for w in words.windows(2) {
            if matches!(w[0], "from" | "join" | "update" | "into") {
                if let Some(t) = tables.get(w[1]) {
                    refs.push(t.as_str());
                }
            }
        }
        refs
    }

    /// What a sharded PostgreSQL (Citus, every table distributed by
    /// `tenant_id`) needs to route a statement to one shard: every stored
    /// table it touches is pinned to the one tenant `$1`, by a `where
    /// tenant_id = $1` of its own or, for an insert, by writing `$1` as the
    /// tenant (and conflicting on a key that leads with it). So a statement
    /// pins at least as many times as it names stored tables (an insert of
    /// rows selected from a pinned table counts its `select tenant_id`), and a join of
    /// two stored tables never happens on anything but one tenant's rows.
    /// The admin statements, which span tenants, are listed and excepted:
    /// docs/DEPLOY.md says what each would become.
    #[test]
    fn every_tenant_statement_routes_to_one_shard() {
        let tables = stored_tables();
        assert!(tables.contains("intents") && tables.contains("chore_leases"));
        let admin: Vec<&str> = admin_statements().collect();
        let mut checked = 0;
        for (name, sql) in all() {
            if admin.contains(&sql) {
                continue;
            }
            let flat = sql.split_whitespace().collect::<Vec<_>>().join(" ");
            let refs = table_refs(&flat, &tables);
            assert!(!refs.is_empty(), "{name} touches no stored table:\n{sql}");
            // An insert of rows selected from a pinned table keeps their
            // tenant (`select tenant_id, ...`): on their shard too.
            let pins = flat.matches("tenant_id = $1").count()
                + flat.matches("values ($1,").count()
                + flat.matches("select $1,").count()
                + flat.matches("select tenant_id,").count();
            assert!(
                pins >= refs.len(),
                "{name} names {} stored tables ({refs:?}) but pins the tenant {pins} times:\n{sql}",
                refs.len()
            );
            checked += 1;
        }
        assert!(checked >= 100, "only {checked} statements checked");
    }

    #[test]
    fn the_unsettled_index_has_the_queries_condition() {
        // SQLite uses a partial index only for a query whose condition
        // contains the index's condition term for term: keep the text equal.
        for sql in [
            include_str!("../../../migrations/sqlite/0009_unsettled_actions.sql"),
            include_str!("../../../migrations/postgres/0009_unsettled_actions.sql"),
        ] {
            assert!(sql.contains(unsettled!()), "{sql}");
        }
    }

    #[test]
    fn the_sqlite_delay_bounds_are_the_histograms() {
        let sql = include_str!("../../../migrations/sqlite/0010_stats_journal.sql");
        let listed: Vec<i64> = sql
            .split("insert into stats_delay_bounds (le_ms) values")
            .nth(1)
            .and_then(|rest| rest.split(';').next())
            .unwrap_or_default()
            .split(',')
            .map(|v| {
                v.trim()
                    .trim_matches(|c| c == '(' || c == ')')
                    .parse()
                    .unwrap_or(-1)
            })
            .collect();
        assert_eq!(listed, crate::stats::DELAY_BOUNDS_MS);
    }

    #[test]
    fn every_statement_is_listed_once_and_the_admin_ones_are_among_them() {
        let listed: Vec<(String, &str)> = all().collect();
        // shared, pg, sqlite, the admin statements and the coalesced writes.
        assert!(listed.len() > 100, "{}", listed.len());
        let names: std::collections::BTreeSet<&str> =
            listed.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names.len(), listed.len(), "a name is listed twice");
        for name in [
            "intents::RECORD_INTENT",
            "webhooks::pg::OUTBOX_FETCH",
            "webhooks::sqlite::OUTBOX_FETCH",
            "admin::ADMIN_UNRESOLVED",
            "intents::PG_RECORD_INTENTS",
        ] {
            assert!(names.contains(name), "{name}");
        }
        let texts: Vec<&str> = listed.iter().map(|(_, sql)| *sql).collect();
        for sql in admin_statements() {
            assert!(
                texts.contains(&sql) || admin::TENANTS_IN_TABLES.contains(&sql),
                "an admin statement is not declared in a list:\n{sql}"
            );
        }
    }

    #[test]
    fn every_key_and_index_leads_with_tenant_id() {
        for (backend, tables, sql) in [
            (
                "sqlite",
                9,
                include_str!("../../../migrations/sqlite/0002_intent_store.sql"),
            ),
            (
                "postgres",
                9,
                include_str!("../../../migrations/postgres/0002_intent_store.sql"),
            ),
            (
                "sqlite",
                2,
                include_str!("../../../migrations/sqlite/0003_tenants.sql"),
            ),
            (
                "postgres",
                2,
                include_str!("../../../migrations/postgres/0003_tenants.sql"),
            ),
            (
                "sqlite",
                1,
                include_str!("../../../migrations/sqlite/0004_demo_ledger.sql"),
            ),
            (
                "postgres",
                1,
                include_str!("../../../migrations/postgres/0004_demo_ledger.sql"),
            ),
            (
                "sqlite",
                1,
                include_str!("../../../migrations/sqlite/0005_scenarios.sql"),
            ),
            (
                "postgres",
                1,
                include_str!("../../../migrations/postgres/0005_scenarios.sql"),
            ),
            (
                "sqlite",
                0,
                include_str!("../../../migrations/sqlite/0006_live_monitor.sql"),
            ),
            (
                "postgres",
                0,
                include_str!("../../../migrations/postgres/0006_live_monitor.sql"),
            ),
            (
                "sqlite",
                1,
                include_str!("../../../migrations/sqlite/0007_deployment_checks.sql"),
            ),
            (
                "postgres",
                1,
                include_str!("../../../migrations/postgres/0007_deployment_checks.sql"),
            ),
            (
                "sqlite",
                0,
                include_str!("../../../migrations/sqlite/0009_unsettled_actions.sql"),
            ),
            (
                "postgres",
                0,
                include_str!("../../../migrations/postgres/0009_unsettled_actions.sql"),
            ),
        ] {
            let flat = sql.split_whitespace().collect::<Vec<_>>().join(" ");
            let keys = flat.matches("primary key (").count()
                + flat.matches(" primary key,").count()
                + flat.matches(" primary key not null,").count();
            let led = flat.matches("primary key (tenant_id").count()
                + flat.matches("tenant_id text primary key").count();
            assert_eq!(
                keys, led,
                "{backend}: a primary key does not lead with tenant_id"
            );
            assert_eq!(keys, tables, "{backend}: tables with keys");
            for part in flat.split("create index ").skip(1) {
                let cols = part.split_once(" (").map(|x| x.1).unwrap_or_default();
                assert!(
                    cols.starts_with("tenant_id"),
                    "{backend}: index {part:.60} does not lead with tenant_id"
                );
            }
        }
    }
}
