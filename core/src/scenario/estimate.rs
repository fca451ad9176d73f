//! The estimate as JSON: what `idem cost --json` prints and idem's MCP
//! server's `estimate_duplicate_cost` answers, written once so the two
//! never differ.

use super::Scenario;
use crate::cost::CostOutputs;

/// Every figure an exact decimal string (rust_decimal's serde-str), plus
/// what the numbers are in: `currency`, the `exchange` the prices were
/// converted at (when their currency differs), the scenario's `link` (a
/// path and query on the dashboard) and the price table's `model`.
pub fn estimate_json(s: &Scenario, o: &CostOutputs) -> serde_json::Value {
    let mut v = serde_json::to_value(o).unwrap_or_else(|_| serde_json::json!({}));
    if let Some(obj) = v.as_object_mut() {
        obj.insert("currency".into(), s.inputs.revenue_currency.code().into());
        // The pair the rate was applied to, so a reader sees which rate its
        // numbers rest on.
        if let Some(fx) = s
            .inputs
            .fx
            .filter(|_| s.inputs.price_currency != s.inputs.revenue_currency)
        {
            obj.insert(
                "exchange".into(),
                serde_json::json!({
                    "from": s.inputs.price_currency.code(),
                    "to": s.inputs.revenue_currency.code(),
                    "rate": fx.normalize().to_string(),
                    // The day the rate was quoted (YYYY-MM-DD), null when
                    // none was given.
                    "date": s.fx_date,
                }),
            );
        }
        obj.insert("link".into(), format!("/?{}", s.to_query()).into());
        // Why the prices look quoted per the other unit, if they do: the
        // figures stand as typed, and a reader of the JSON sees the doubt.
        obj.insert(
            "unit_warning".into(),
            super::unit_warning(s, o).map(|w| w.code()).into(),
        );
        // A rate that looks the wrong way round against the reference
        // rates (`inverted`), else null.
        obj.insert(
            "rate_warning".into(),
            super::rate_inverted(s).then_some("inverted").into(),
        );
        if let Some(m) = &s.model {
            obj.insert("model".into(), m.as_str().into());
        }
    }
    v
}
