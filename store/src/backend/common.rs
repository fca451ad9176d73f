//! What every concern's queries share: [`queries!`], which declares a
//! concern's trait and implements it over both backends' connections from
//! one body per query, and the helpers those bodies use.

/// A query's result: sqlx's error, which the session turns into the
/// store's.
pub(crate) type R<T> = Result<T, sqlx::Error>;

/// Declares a concern's queries as a trait (`fn name(c, args) -> R<T> { body }`,
/// one per statement, documented where it is declared) and implements it
/// for `sqlx::SqliteConnection` and `sqlx::PgConnection` with the same body:
/// inside it, `c` is the connection, `Db` the backend, and `q` the
/// concern's statements as the backend runs them (`crate::sql::intents::pg`
/// for `statements in intents`), so the two backends cannot drift apart. A session calls them as methods on
/// whichever connection it holds (`session::on!`).
macro_rules! queries {
    (
        statements in $stmts:ident;
        $(#[$attr:meta])*
        $vis:vis trait $trait:ident {
            $(
                $(#[$fattr:meta])*
                fn $name:ident($c:ident $(, $arg:ident: $ty:ty)* $(,)?) -> $ret:ty $body:block
            )*
        }
    ) => {
        $(#[$attr])*
        $vis trait $trait {
            $(
                $(#[$fattr])*
                async fn $name(&mut self $(, $arg: $ty)*) -> $ret;
            )*
        }
        queries!(@impl $trait, sqlx::SqliteConnection, sqlx::Sqlite, $stmts, sqlite;
            $(fn $name($c $(, $arg: $ty)*) -> $ret $body)*);
        queries!(@impl $trait, sqlx::PgConnection, sqlx::Postgres, $stmts, pg;
            $(fn $name($c $(, $arg: $ty)*) -> $ret $body)*);
    };
    (@impl $trait:ident, $conn:ty, $db:ty, $stmts:ident, $dialect:ident;
        $(fn $name:ident($c:ident $(, $arg:ident: $ty:ty)*) -> $ret:ty $body:block)*) => {
        impl $trait for $conn {
            $(
                #[allow(unused_imports)]
                async fn $name(&mut self $(, $arg: $ty)*) -> $ret {
                    use crate::sql::$stmts::$dialect as q;
                    use sqlx::Row as _;
                    #[allow(dead_code)]
                    type Db = $db;
                    let $c = self;
                    $body
                }
            )*
        }
    };
}
pub(crate) use queries;

/// Binds the counters of a [`Counts`] in the order the rollup and journal
/// statements list their columns (intents … delay_max_ms).
macro_rules! bind_counts {
    ($q:expr, $n:expr) => {
        $q.bind($n.intents)
            .bind($n.deliveries)
            .bind($n.redeliveries)
            .bind($n.redelivered_intents)
            .bind($n.divergences)
            .bind($n.corrections)
            .bind($n.actions_started)
            .bind($n.actions_completed)
            .bind($n.actions_failed)
            .bind($n.actions_uncertain)
            .bind($n.http_replays)
            .bind($n.http_409)
            .bind($n.http_422)
            .bind($n.delay_max_ms)
    };
}
pub(crate) use bind_counts;

/// Statements that write and `returning` rows are read to the end, never
/// with `fetch_one` or `fetch_optional`. Those stop stepping a SQLite
/// statement after its first row and reset it; in autocommit mode the
/// COMMIT runs at that reset, and sqlx discards the reset's error. A commit
/// that fails there (disk full, read-only volume, I/O error) rolls the row
/// back while the caller is told it was written: an acknowledged intent that
/// is not in the database. Reading to the end makes the commit's error the
/// last step's error. The reliability suite found this with a full disk.
pub(crate) fn first<T>(rows: Vec<T>) -> Result<T, sqlx::Error> {
    rows.into_iter().next().ok_or(sqlx::Error::RowNotFound)
}

/// [`first`] for statements that may return no row.
pub(crate) fn first_opt<T>(rows: Vec<T>) -> Option<T> {
    rows.into_iter().next()
}
