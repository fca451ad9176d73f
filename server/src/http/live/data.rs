//! The live monitor's numbers as the server assembles them: what
//! `/live/data.json` returns and what [`super::render`] draws.

use app::i18n::tr;
use idem_core::catalog::Rule;
use idem_core::locale::{Currency, Locale};
use idem_core::scenario::{Field, Scenario};
use rust_decimal::Decimal;
use serde::Serialize;

/// The windows the monitor offers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Default)]
pub enum Window {
    /// The last hour, by minute.
    #[serde(rename = "1h")]
    Hour,
    /// The last 24 hours, by hour.
    #[serde(rename = "24h")]
    #[default]
    Day,
    /// The last 7 days, by hour.
    #[serde(rename = "7d")]
    Week,
    /// The last 30 days, by day.
    #[serde(rename = "30d")]
    Month,
}

/// A minute, in ms.
pub(crate) const MINUTE: i64 = 60_000;
/// An hour, in ms.
pub(crate) const HOUR: i64 = 3_600_000;
/// A day, in ms.
pub(crate) const DAY: i64 = 86_400_000;

impl Window {
    /// Every window, in the order the form lists them.
    pub const ALL: [Window; 4] = [Window::Hour, Window::Day, Window::Week, Window::Month];

    /// As written in `?window=`.
    pub fn as_str(self) -> &'static str {
        match self {
            Window::Hour => "1h",
            Window::Day => "24h",
            Window::Week => "7d",
            Window::Month => "30d",
        }
    }

    /// Reads `?window=`.
    pub fn parse(s: &str) -> Option<Window> {
        Window::ALL.into_iter().find(|w| w.as_str() == s)
    }

    /// The window's length.
    pub fn len_ms(self) -> i64 {
        match self {
            Window::Hour => HOUR,
            Window::Day => DAY,
            Window::Week => 7 * DAY,
            Window::Month => 30 * DAY,
        }
    }

    /// The chart's bucket width (the statistics' granularity).
    pub fn bucket_ms(self) -> i64 {
        match self {
            Window::Hour => MINUTE,
            Window::Day | Window::Week => HOUR,
            Window::Month => DAY,
        }
    }

    /// The window as the page names it.
    pub fn label(self, l: Locale) -> &'static str {
        match self {
            Window::Hour => tr(l, "última hora", "last hour"),
            Window::Day => tr(l, "últimas 24 h", "last 24 h"),
            Window::Week => tr(l, "últimos 7 dias", "last 7 days"),
            Window::Month => tr(l, "últimos 30 dias", "last 30 days"),
        }
    }
}

/// Counters over the window: the statistics rollups' own [`Counts`],
/// summed (one declaration of the counters, in the store).
pub use idem_store::stats::Counts;

/// The measured duplicate rate of a set of counters.
pub trait DuplicateRate {
    /// Intents delivered more than once per intent recorded, in percent,
    /// to two decimals; `None` without intents.
    fn duplicate_rate_pct(&self) -> Option<Decimal>;
}

impl DuplicateRate for Counts {
    fn duplicate_rate_pct(&self) -> Option<Decimal> {
        (self.intents > 0).then(|| {
            (Decimal::from(self.redelivered_intents) * Decimal::ONE_HUNDRED
                / Decimal::from(self.intents))
            .round_dp(2)
        })
    }
}

/// One tenant and action type over the window.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LiveRow {
    /// Tenant.
    pub tenant: String,
    /// Action type (`http` for Idempotency-Key counters).
    pub action: String,
    /// Counters.
    #[serde(flatten)]
    pub counts: Counts,
    /// Actions of this type whose outcome is unknown now (marked uncertain,
    /// or a lease that ran out): the same definition as the card and the
    /// list, whatever the window.
    pub uncertain_now: i64,
}

/// One chart bucket (every tenant and action shown, summed).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct LivePoint {
    /// Bucket start, ms since the epoch (UTC).
    pub start_ms: i64,
    /// Deliveries in the bucket.
    pub deliveries: i64,
    /// Redeliveries in the bucket.
    pub redeliveries: i64,
    /// Intents recorded in the bucket.
    pub intents: i64,
    /// Intents that got their second delivery in the bucket.
    pub redelivered_intents: i64,
}

/// An alert firing now.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LiveAlert {
    /// Tenant.
    pub tenant: String,
    /// The alert's id.
    pub alert_id: String,
    /// The number it watches.
    pub metric: String,
    /// Its threshold.
    pub above: String,
    /// The number at its last evaluation.
    pub value: Option<String>,
    /// Since when the number has been above the threshold.
    pub since_ms: Option<i64>,
}

/// An action whose outcome is unknown.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LiveUncertain {
    /// Tenant.
    pub tenant: String,
    /// The key to reconcile.
    pub key: String,
    /// Action type.
    pub action: String,
    /// When the attempt started.
    pub started_ms: i64,
    /// When its lease ran out, when known.
    pub lease_until_ms: Option<i64>,
    /// Claims so far.
    pub attempts: i32,
    /// The business reference of the intent the key was derived from
    /// (absent when no kept intent has this key).
    pub reference: Option<String>,
    /// The amount in the intent (its action's first `money_cents` or
    /// `money_minor` field), as exact decimal text.
    pub amount: Option<Decimal>,
    /// The amount's currency, when the intent names one (`money_minor`);
    /// null for cents.
    pub currency: Option<Currency>,
    /// The customer in the intent (its action's `customer` field).
    pub customer: Option<String>,
    /// How long ago the attempt whose outcome is unknown started, in ms.
    pub age_ms: i64,
}

impl LiveUncertain {
    /// The store's row, with what its intent says about it.
    pub fn new(
        tenant: &str,
        u: idem_store::UncertainAction,
        catalog: &idem_core::Catalog,
        now: i64,
    ) -> Self {
        let facts = u
            .payload
            .as_deref()
            .map(|p| IntentFacts::read(catalog, &u.action, p))
            .unwrap_or_default();
        LiveUncertain {
            tenant: tenant.to_owned(),
            age_ms: (now - u.started_ms).max(0),
            key: u.key,
            action: u.action,
            started_ms: u.started_ms,
            lease_until_ms: u.lease_until_ms,
            attempts: u.attempts,
            // Shown to a person (pages, copy buttons, files): a
            // direction override in what a client sent is written out.
            reference: u.reference.map(|r| idem_core::reveal_bidi(&r).into_owned()),
            amount: facts.amount,
            currency: facts.currency,
            customer: facts
                .customer
                .map(|c| idem_core::reveal_bidi(&c).into_owned()),
        }
    }
}

/// What an intent's frozen payload says to whoever reconciles its action:
/// how much, in what, and for whom. Read through the catalog (the amount is
/// the action's first `money_cents` or `money_minor` field, the customer
/// its `customer` field); an action the catalog no longer lists says
/// nothing.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IntentFacts {
    /// The amount, exact (cents / 100, or minor units in the currency's
    /// digits: 12345 fils are 12.345 dinars).
    pub amount: Option<Decimal>,
    /// The amount's currency, when a `money_minor` field names it (the
    /// catalog's `currency` or the payload's `currency_field`).
    pub currency: Option<Currency>,
    /// The customer.
    pub customer: Option<String>,
}

impl IntentFacts {
    /// Reads `payload` (the stored canonical JSON of normalized fields).
    pub fn read(catalog: &idem_core::Catalog, action: &str, payload: &str) -> Self {
        let Ok(spec) = catalog.action(action) else {
            return Self::default();
        };
        let Ok(fields) =
            serde_json::from_str::<std::collections::BTreeMap<String, String>>(payload)
        else {
            return Self::default();
        };
        let customer = spec.customer.as_ref().and_then(|f| fields.get(f)).cloned();
        let Some(field) = spec.amount_spec() else {
            return IntentFacts {
                customer,
                ..Self::default()
            };
        };
        // Normalized money is an integer count of the unit the rule names.
        let units = fields.get(&*field.name).and_then(|c| c.parse::<i64>().ok());
        let (amount, currency) = match field.rule {
            Rule::MoneyMinor => {
                let currency = spec.currency.or_else(|| {
                    let named = spec.currency_field.as_deref().unwrap_or("currency");
                    fields.get(named).and_then(|c| Currency::from_code(c))
                });
                let amount = currency
                    .zip(units)
                    .map(|(c, u)| Decimal::new(u, c.minor_units()));
                (amount, currency)
            }
            _ => (units.map(|u| Decimal::new(u, 2)), None),
        };
        IntentFacts {
            amount,
            currency,
            customer,
        }
    }

    /// The amount as a person reads it: in its currency's digits with its
    /// code when the intent names one (`BHD 12,345`), else to the cent.
    pub fn amount_text(amount: Decimal, currency: Option<Currency>, l: Locale) -> String {
        match currency {
            Some(c) => idem_core::locale::format_money(amount, l, c),
            None => idem_core::locale::format_decimal(amount, l, 2, 2),
        }
    }
}

/// A tenant's unsettled actions: what retention keeps until someone
/// settles or reconciles them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LiveUnresolved {
    /// Tenant.
    pub tenant: String,
    /// Actions not settled (started, uncertain, failed but retryable).
    pub count: i64,
    /// When the oldest one's attempt started.
    pub oldest_started_ms: Option<i64>,
    /// Its age when the numbers were read, in ms.
    pub oldest_age_ms: Option<i64>,
}

/// Webhook deliveries by state (see [`idem_store::WebhookCounts`]).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct LiveWebhooks {
    /// Waiting for a first attempt, or in it.
    pub pending: i64,
    /// Waiting after a failed attempt.
    pub retrying: i64,
    /// Delivered (a 2xx came back).
    pub delivered: i64,
    /// Dead-lettered after 24 h of failures.
    pub dead_lettered: i64,
    /// How long the oldest waiting message has waited, in ms.
    pub oldest_waiting_age_ms: Option<i64>,
}

impl LiveWebhooks {
    /// Adds one tenant's counts, read at `now`.
    pub fn add(&mut self, c: &idem_store::WebhookCounts, now: i64) {
        self.pending += c.pending;
        self.retrying += c.retrying;
        self.delivered += c.delivered;
        self.dead_lettered += c.dead_lettered;
        if let Some(t) = c.oldest_waiting_ms {
            let age = (now - t).max(0);
            self.oldest_waiting_age_ms =
                Some(self.oldest_waiting_age_ms.map_or(age, |a| a.max(age)));
        }
    }

    /// Whether there is anything to show.
    pub fn any(&self) -> bool {
        self.pending + self.retrying + self.delivered + self.dead_lettered > 0
    }
}

/// The redelivery horizon against the retention that must cover it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct LiveHorizon {
    /// Redeliveries whose delay was measured.
    pub measured: i64,
    /// 99th percentile delay (upper bound of its histogram bucket).
    pub p99_ms: Option<i64>,
    /// Longest delay.
    pub max_ms: Option<i64>,
    /// The shortest intent retention among the tenants shown.
    pub retention_ms: Option<i64>,
    /// Retention is under twice the longest observed delay.
    pub warning: bool,
}

/// One guarded MCP tool of one tenant over the window.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct LiveMcpTool {
    /// The tenant.
    pub tenant: String,
    /// Its counts.
    #[serde(flatten)]
    pub counts: idem_store::McpToolCounts,
}

/// Everything the monitor shows, as `/live/data.json` returns it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct LiveData {
    /// When the numbers were read, ms since the epoch.
    pub generated_ms: i64,
    /// The window.
    pub window: Window,
    /// Window start (inclusive, floored to a bucket).
    pub from_ms: i64,
    /// Window end (exclusive).
    pub to_ms: i64,
    /// The chart's bucket width.
    pub bucket_ms: i64,
    /// The tenant asked for (`None`: every tenant the viewer may see).
    pub tenant: Option<String>,
    /// The tenants shown.
    pub tenants: Vec<String>,
    /// Every tenant an admin may pick (also while one is picked), for the
    /// page's select; not part of the JSON.
    #[serde(skip)]
    pub tenant_choices: Vec<String>,
    /// Whether the viewer sees every tenant (admin, or the open loopback).
    pub admin: bool,
    /// Sums over every tenant and action shown.
    pub totals: Counts,
    /// `totals.redelivered_intents / totals.intents`, percent, two decimals.
    pub duplicate_rate_pct: Option<String>,
    /// Per tenant and action type.
    pub rows: Vec<LiveRow>,
    /// Per bucket, oldest first, every bucket of the window.
    pub series: Vec<LivePoint>,
    /// Actions holding a running lease now.
    pub in_flight: i64,
    /// Actions whose outcome is unknown now.
    pub uncertain: i64,
    /// The newest uncertain actions.
    pub uncertain_keys: Vec<LiveUncertain>,
    /// Alerts firing now (`idem alert add`), per tenant.
    pub alerts_firing: Vec<LiveAlert>,
    /// Per tenant with unsettled actions: how many, and the oldest's age.
    pub unresolved: Vec<LiveUnresolved>,
    /// The outbox relay's webhook deliveries, every tenant in scope
    /// together: pending, retrying, delivered, dead-lettered, and the age
    /// of the oldest message still waiting.
    pub webhooks: LiveWebhooks,
    /// The MCP gateway's guarded tools over the window, per tenant and tool
    /// (the counts `/v1/stats` and `/metrics` read too).
    pub mcp_tools: Vec<LiveMcpTool>,
    /// Redelivery horizon and retention.
    pub horizon: LiveHorizon,
    /// The calculator link with the measured monthly volume and rate.
    pub use_numbers: Option<String>,
}

/// Whether a row counts business intents: not the HTTP Idempotency-Key
/// counters (`http`) nor the lease sweeps' bucket (`*`), which are not
/// conversations.
pub fn is_conversation_action(action: &str) -> bool {
    action != "http" && action != "*"
}

/// The calculator scenario the measured traffic implies: the window's
/// intents scaled to 30 days, and the measured duplicate rate. `None`
/// without intents, and for the one-hour window: an hour scaled ×720 says
/// more about the hour than about the month.
pub fn measured_scenario(window: Window, totals: &Counts) -> Option<Scenario> {
    if window.len_ms() < DAY {
        return None;
    }
    let rate = totals.duplicate_rate_pct()?;
    let monthly = (Decimal::from(totals.intents) * Decimal::from(30 * DAY)
        / Decimal::from(window.len_ms()))
    .round()
    .max(Decimal::ONE);
    let mut s = Scenario::default();
    s.inputs.conversations = Field::Conversations.check(monthly).ok()?;
    s.inputs.duplicate_rate_pct = Field::DuplicateRate.check(rate).ok()?;
    Some(s)
}

/// The `/?…` link of [`measured_scenario`], carrying where the numbers came
/// from (`src=live`, the window `lw`, the intents counted `li`, the tenant
/// `lt` and action `la` when one was chosen) so the calculator can say so.
pub fn use_numbers_href(
    window: Window,
    totals: &Counts,
    tenant: Option<&str>,
    action: Option<&str>,
) -> Option<String> {
    let s = measured_scenario(window, totals)?;
    let mut q = form_urlencoded::Serializer::new(String::new());
    q.append_pair("src", "live");
    q.append_pair("lw", window.as_str());
    q.append_pair("li", &totals.intents.to_string());
    if let Some(t) = tenant {
        q.append_pair("lt", t);
    }
    if let Some(a) = action {
        q.append_pair("la", a);
    }
    Some(format!("/?{}&{}", s.to_query(), q.finish()))
}

impl LiveData {
    /// The tenants the admin may pick from: every tenant, plus the one
    /// asked for (which may not exist).
    pub(crate) fn tenants_all(&self) -> Vec<String> {
        let mut v = if self.tenant_choices.is_empty() {
            self.tenants.clone()
        } else {
            self.tenant_choices.clone()
        };
        if let Some(t) = &self.tenant {
            if !v.contains(t) {
                v.push(t.clone());
            }
        }
        v
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) fn totals(intents: i64, redelivered: i64) -> Counts {
        Counts {
            intents,
            redelivered_intents: redelivered,
            deliveries: intents + redelivered,
            redeliveries: redelivered,
            ..Counts::default()
        }
    }

    #[test]
    fn the_rate_is_exact_and_absent_without_intents() {
        assert_eq!(
            totals(900, 27).duplicate_rate_pct(),
            Some(Decimal::new(300, 2))
        );
        assert_eq!(
            totals(3, 1).duplicate_rate_pct(),
            Some(Decimal::new(3333, 2))
        );
        assert_eq!(totals(0, 0).duplicate_rate_pct(), None);
    }

    #[test]
    fn use_these_numbers_scales_the_window_to_a_month() {
        // 1,000 intents in 24 h is 30,000 a month; 30 of them redelivered: 3%.
        let href = use_numbers_href(Window::Day, &totals(1_000, 30), None, None).unwrap();
        assert_eq!(href, "/?v=2&src=live&lw=24h&li=1000");
        // 70 intents in 7 days is 300 a month.
        let href = use_numbers_href(
            Window::Week,
            &totals(70, 7),
            Some("loja 1"),
            Some("pix.charge"),
        )
        .unwrap();
        assert_eq!(
            href,
            "/?v=2&c=300&d=10&src=live&lw=7d&li=70&lt=loja+1&la=pix.charge"
        );
        // An hour is refused: ×720 is a guess, not a measurement.
        assert_eq!(
            use_numbers_href(Window::Hour, &totals(10, 1), None, None),
            None
        );
        assert_eq!(
            use_numbers_href(Window::Week, &totals(0, 0), None, None),
            None
        );
        assert!(!is_conversation_action("http") && !is_conversation_action("*"));
    }
}
