//! The bundled model price table: a pinned snapshot of pydantic's
//! genai-prices (MIT, `server/prices/LICENSE-genai-prices`), written by
//! `scripts/update-prices`. It lives in the server binary only: the
//! calculator's picker searches it here (`/prices`), so the wasm never
//! carries it.
//!
//! Prices are USD per 1M tokens, as the table gives them. A scenario that
//! takes a model's prices stores the prices themselves in its link, so a
//! later table never changes a shared link's numbers.

use idem_core::cost::PriceUnit;
use idem_core::locale::Currency;
use idem_core::scenario::Scenario;
use rust_decimal::Decimal;
use std::str::FromStr;
use std::sync::OnceLock;

const TABLE: &str = include_str!("../prices/genai-prices.tsv");

/// One model's text-token prices.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelPrice {
    /// `provider/model`, what links and `--model` name.
    pub id: String,
    /// The provider's display name.
    pub provider_name: &'static str,
    /// The model's display name.
    pub name: &'static str,
    /// Input, per 1M tokens.
    pub input: Decimal,
    /// Cached input (cache read), when the provider prices it.
    pub cached: Option<Decimal>,
    /// Output, per 1M tokens.
    pub output: Decimal,
    /// The input price has tiers by prompt size; this is the base tier.
    pub tiered: bool,
}

impl ModelPrice {
    /// The price of cached input as the calculator takes it: the table's,
    /// or the full input price where the provider has no cache discount.
    pub fn cached_or_input(&self) -> Decimal {
        self.cached.unwrap_or(self.input)
    }

    /// Puts this model's prices into a scenario: USD per 1M tokens, with
    /// the model's id and the table's date.
    pub fn fill(&self, s: &mut Scenario, table_date: &str) {
        s.inputs.price_currency = Currency::USD;
        s.inputs.price_unit = PriceUnit::PerMillion;
        s.inputs.price_in = self.input;
        s.inputs.price_cached = self.cached_or_input();
        s.inputs.price_out = self.output;
        s.model = Some(self.id.clone());
        s.model_date = Some(table_date.to_owned());
    }
}

/// The table, parsed once.
#[derive(Debug)]
pub struct PriceTable {
    /// The header's first line: source, version and license.
    pub source: &'static str,
    /// The day the prices were in effect (`YYYY-MM-DD`).
    pub date: &'static str,
    /// Every model, sorted by id.
    pub models: Vec<ModelPrice>,
}

/// The bundled table.
pub fn table() -> &'static PriceTable {
    static T: OnceLock<PriceTable> = OnceLock::new();
    T.get_or_init(|| parse(TABLE))
}

fn parse(text: &'static str) -> PriceTable {
    let mut source = "";
    let mut date = "";
    let mut models = Vec::new();
    let dec = |s: &str| Decimal::from_str(s).ok();
    for line in text.lines() {
        if let Some(h) = line.strip_prefix("# ") {
            if source.is_empty() {
                source = h;
            }
            if let Some(d) = h.strip_prefix("snapshot\t") {
                date = d;
            }
            continue;
        }
        let cols: Vec<&'static str> = line.split('\t').collect();
        let [provider, provider_name, model, name, input, cached, output, note] = cols[..] else {
            continue;
        };
        // A model the calculator cannot price (no input price) is left out.
        let Some(input) = dec(input) else { continue };
        models.push(ModelPrice {
            id: format!("{provider}/{model}"),
            provider_name,
            name,
            input,
            cached: dec(cached),
            output: dec(output).unwrap_or(Decimal::ZERO),
            tiered: note == "tiered",
        });
    }
    models.sort_by(|a, b| a.id.cmp(&b.id));
    PriceTable {
        source,
        date,
        models,
    }
}

impl PriceTable {
    /// The model with this id (`provider/model`), case-insensitively.
    pub fn get(&self, id: &str) -> Option<&ModelPrice> {
        self.models
            .binary_search_by(|m| m.id.as_str().cmp(id))
            .ok()
            .map(|i| &self.models[i])
            .or_else(|| self.models.iter().find(|m| m.id.eq_ignore_ascii_case(id)))
    }

    /// Models whose id, name or provider contain every word of `query`
    /// (case-insensitive), exact id first, then shorter ids first (the
    /// base model before its dated variants); at most `limit`.
    pub fn search(&self, query: &str, limit: usize) -> Vec<&ModelPrice> {
        let words: Vec<String> = query.split_whitespace().map(str::to_lowercase).collect();
        let q = query.trim().to_lowercase();
        let mut hits: Vec<&ModelPrice> = self
            .models
            .iter()
            .filter(|m| {
                let hay = format!("{} {} {}", m.id, m.name, m.provider_name).to_lowercase();
                words.iter().all(|w| hay.contains(w.as_str()))
            })
            .collect();
        hits.sort_by_key(|m| (m.id.to_lowercase() != q, m.id.len(), m.id.clone()));
        hits.truncate(limit);
        hits
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use idem_core::scenario::is_model_id;

    #[test]
    fn the_bundled_table_reads_whole() {
        let t = table();
        assert!(
            t.source.contains("genai-prices") && t.source.contains("MIT"),
            "{}",
            t.source
        );
        assert!(idem_core::scenario::is_iso_date(t.date), "{}", t.date);
        assert!(t.models.len() > 1000, "{}", t.models.len());
        // Every id can travel in a link, and ids are unique.
        for w in t.models.windows(2) {
            assert!(w[0].id < w[1].id, "{} / {}", w[0].id, w[1].id);
        }
        for m in &t.models {
            assert!(is_model_id(&m.id), "{}", m.id);
            assert!(m.input >= Decimal::ZERO && m.output >= Decimal::ZERO);
        }
    }

    #[test]
    fn the_unit_warning_knows_the_tables_bounds() {
        // The calculator warns of a price, in dollars per 1M, above or
        // below any of its kind the table has: an update of the table that
        // moves a bound moves the warning's too.
        let t = table();
        let bounds = |prices: Vec<Decimal>| {
            let lo = prices
                .iter()
                .copied()
                .filter(|p| *p > Decimal::ZERO)
                .min()
                .unwrap_or_default();
            (lo, prices.into_iter().max().unwrap_or_default())
        };
        let input = bounds(
            t.models
                .iter()
                .flat_map(|m| [Some(m.input), m.cached])
                .flatten()
                .collect(),
        );
        let output = bounds(t.models.iter().map(|m| m.output).collect());
        assert_eq!(input.1, idem_core::scenario::TABLE_INPUT.1, "largest input");
        assert_eq!(output, idem_core::scenario::TABLE_OUTPUT, "output");
        // The smallest input is the smallest uncached one: a cache price
        // far below it is normal and only checked against the largest.
        let uncached = bounds(t.models.iter().map(|m| m.input).collect());
        assert_eq!(
            uncached.0,
            idem_core::scenario::TABLE_INPUT.0,
            "smallest input"
        );
    }

    #[test]
    fn lookup_and_search() {
        let t = table();
        let m = t.get("anthropic/claude-3-5-sonnet").unwrap();
        assert_eq!(
            (m.input, m.cached, m.output),
            (
                Decimal::from(3),
                Some(Decimal::new(3, 1)),
                Decimal::from(15)
            )
        );
        assert!(t.get("nobody/nothing").is_none());
        let hits = t.search("openai gpt-4.1 mini", 5);
        assert!(!hits.is_empty());
        assert!(
            hits.iter().all(|m| m.id.contains("gpt-4.1-mini")),
            "{hits:?}"
        );
        assert_eq!(
            t.search("anthropic/claude-3-5-sonnet", 3)[0].id,
            "anthropic/claude-3-5-sonnet"
        );
        assert!(t.search("zzzz-no-such-model", 5).is_empty());
    }
}
