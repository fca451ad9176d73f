//! The alerts' statements.

statements! {
    HERE;

    /// Adds an alert (its id is new: random).
    pub const INSERT_ALERT: &str = "\
insert into alerts
    (tenant_id, alert_id, metric, above, for_ms, window_ms, endpoint_id, state, created_ms)
values ($1, $2, $3, $4, $5, $6, $7, 'ok', $8)";

    /// A tenant's alerts, oldest first.
    pub const LIST_ALERTS: &str = "\
select alert_id, metric, above, for_ms, window_ms, endpoint_id, state, since_ms,
    last_value, evaluated_ms, created_ms
from alerts
where tenant_id = $1
order by created_ms, alert_id";

    /// Removes an alert.
    pub const DELETE_ALERT: &str = "\
delete from alerts
where tenant_id = $1 and alert_id = $2";

    /// Records an evaluation. Only from the state the evaluator read ($3),
    /// so two instances evaluating at once move an alert once: the second
    /// matches no row and sends nothing.
    pub const UPDATE_ALERT: &str = "\
update alerts set state = $4, since_ms = $5, last_value = $6, evaluated_ms = $7
where tenant_id = $1 and alert_id = $2 and state = $3";
}

statements! {
    ADMIN;

    /// Admin: the tenants with alerts (the evaluator visits them).
    pub const ALERT_TENANTS: &str = tenants_sql!("alerts");
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
