//! The action catalog: for each action type, the explicit fields that enter
//! its key, the rule of each, the rules version, and the field that carries
//! the intent reference.

use crate::{ActionType, Error};
#[cfg(feature = "toml")]
use serde::Deserialize;
use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

/// The built-in catalog: the two actions of the reference article.
#[cfg(feature = "toml")]
pub const BUILTIN_TOML: &str = include_str!("../default-catalog.toml");

/// A version of the normalization rules. Changing a rule changes every key,
/// so rules only change under a new version, picked per action.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(into = "u32")]
pub enum RulesVersion {
    /// The reference derivation, byte for byte.
    V1,
    /// v1 with Pix keys in the directory's canonical form.
    V2,
}

impl RulesVersion {
    /// The number written into the canonical JSON (`"v"`).
    pub fn number(self) -> u32 {
        match self {
            RulesVersion::V1 => 1,
            RulesVersion::V2 => 2,
        }
    }
}

impl From<RulesVersion> for u32 {
    fn from(v: RulesVersion) -> u32 {
        v.number()
    }
}

impl TryFrom<u32> for RulesVersion {
    type Error = Error;
    fn try_from(n: u32) -> Result<Self, Error> {
        match n {
            1 => Ok(RulesVersion::V1),
            2 => Ok(RulesVersion::V2),
            n => Err(Error::RulesVersion(n)),
        }
    }
}

impl fmt::Display for RulesVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.number())
    }
}

/// A named normalization rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rule {
    /// The text as given (an integer as its digits). Case-sensitive ids.
    RawText,
    /// Surrounding whitespace removed (business references).
    Trim,
    /// Trimmed and lowercased (template names).
    TrimLower,
    /// Only the ASCII digits kept.
    Digits,
    /// Money as integer cents; refuses sub-cent digits and negatives.
    MoneyCents,
    /// A Pix destination: v1 strips punctuation, v2 writes the canonical form.
    PixKey,
    /// Money as an integer count of its currency's smallest unit (0, 2, 3 or
    /// 4 decimals, by ISO 4217): the currency is the action's `currency`, or
    /// the one its `currency_field` names in the payload. Refuses a digit
    /// below the unit and negatives, so 12.345 and 12.346 dinars are two
    /// keys, never one.
    MoneyMinor,
}

impl Rule {
    /// Every rule's name as written in a catalog file.
    pub const NAMES: [&'static str; 7] = [
        "raw_text",
        "trim",
        "trim_lower",
        "digits",
        "money_cents",
        "pix_key",
        "money_minor",
    ];

    #[cfg(feature = "toml")]
    fn from_name(s: &str) -> Option<Self> {
        Some(match s {
            "raw_text" => Rule::RawText,
            "trim" => Rule::Trim,
            "trim_lower" => Rule::TrimLower,
            "digits" => Rule::Digits,
            "money_cents" => Rule::MoneyCents,
            "pix_key" => Rule::PixKey,
            "money_minor" => Rule::MoneyMinor,
            _ => return None,
        })
    }
}

/// One field of an action's key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldSpec {
    /// The payload field's name (shared with every normalized payload).
    pub name: Arc<str>,
    /// How it is normalized.
    pub rule: Rule,
}

/// One action type's key recipe.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ActionSpec {
    /// The action type.
    pub action: ActionType,
    /// The rules version its keys are derived with.
    pub rules_version: RulesVersion,
    /// The field that carries the intent reference.
    pub reference: String,
    /// Under rules v2, the payload field that may declare the Pix key type.
    pub pix_type_field: Option<String>,
    /// The field that names the customer, when the action has one: shown
    /// beside an uncertain action so whoever reconciles it knows whom to
    /// ask about. It never changes a key.
    pub customer: Option<String>,
    /// The currency of the action's `money_minor` fields, when the catalog
    /// fixes one.
    pub currency: Option<crate::currency::Currency>,
    /// The payload field that names the currency of the `money_minor`
    /// fields (an ISO 4217 code), when the payload says it; one of the
    /// key's fields, so an amount in another currency is another key.
    pub currency_field: Option<String>,
    /// The fields, sorted by name (the canonical JSON's order).
    fields: Vec<FieldSpec>,
}

impl ActionSpec {
    /// The fields that enter the key, sorted by name.
    pub fn fields(&self) -> &[FieldSpec] {
        &self.fields
    }

    /// The first amount field (rule `money_cents` or `money_minor`), if
    /// any: what an uncertain action of this type may have charged.
    pub fn amount_field(&self) -> Option<&str> {
        self.amount_spec().map(|f| &*f.name)
    }

    /// The first amount field's spec (its rule says how its normalized
    /// value reads: cents, or the minor unit of the action's currency).
    pub fn amount_spec(&self) -> Option<&FieldSpec> {
        self.fields
            .iter()
            .find(|f| matches!(f.rule, Rule::MoneyCents | Rule::MoneyMinor))
    }
}

/// The set of known actions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Catalog {
    actions: BTreeMap<String, ActionSpec>,
}

#[cfg(feature = "toml")]
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCatalog {
    #[serde(default)]
    actions: BTreeMap<String, RawAction>,
}

#[cfg(feature = "toml")]
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawAction {
    rules_version: Option<u32>,
    reference: Option<String>,
    pix_type_field: Option<String>,
    customer: Option<String>,
    currency: Option<String>,
    currency_field: Option<String>,
    #[serde(default)]
    fields: Vec<RawField>,
}

#[cfg(feature = "toml")]
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawField {
    name: Option<String>,
    rule: Option<String>,
}

impl Catalog {
    /// The built-in catalog (`pix.cobranca` and `email.cobranca`, rules v1).
    #[cfg(feature = "toml")]
    pub fn builtin() -> Self {
        // The built-in file is covered by a unit test; a failure here is a
        // build defect, not user input.
        Self::from_toml(BUILTIN_TOML).unwrap_or_else(|e| panic!("built-in catalog is invalid: {e}"))
    }

    /// Parses and checks a catalog. Unknown rules, actions without fields,
    /// fields without a rule, duplicate fields and unknown settings are
    /// refused with a message naming the action and field.
    #[cfg(feature = "toml")]
    pub fn from_toml(text: &str) -> Result<Self, Error> {
        let raw: RawCatalog =
            toml::from_str(text).map_err(|e| Error::Catalog(e.message().to_owned()))?;
        if raw.actions.is_empty() {
            return Err(Error::Catalog(
                "the catalog defines no action ([actions.\"name\"] tables)".into(),
            ));
        }
        let mut actions = BTreeMap::new();
        for (name, a) in raw.actions {
            let action =
                ActionType::try_from(name.as_str()).map_err(|e| Error::Catalog(e.to_string()))?;
            if a.fields.is_empty() {
                return Err(Error::Catalog(format!(
                    "action `{name}` has no fields: a key must depend on something"
                )));
            }
            let rules_version = RulesVersion::try_from(a.rules_version.unwrap_or(1))
                .map_err(|e| Error::Catalog(format!("action `{name}`: {e}")))?;
            let mut fields = Vec::with_capacity(a.fields.len());
            for (i, f) in a.fields.into_iter().enumerate() {
                let fname = f.name.filter(|n| !n.is_empty()).ok_or_else(|| {
                    Error::Catalog(format!("action `{name}`: field #{} has no name", i + 1))
                })?;
                let rule_name = f.rule.ok_or_else(|| {
                    Error::Catalog(format!(
                        "action `{name}`: field `{fname}` has no rule (known rules: {})",
                        Rule::NAMES.join(", ")
                    ))
                })?;
                let rule = Rule::from_name(&rule_name).ok_or_else(|| {
                    Error::Catalog(format!(
                        "action `{name}`: field `{fname}` names unknown rule `{rule_name}` (known rules: {})",
                        Rule::NAMES.join(", ")
                    ))
                })?;
                if fields.iter().any(|x: &FieldSpec| *x.name == *fname) {
                    return Err(Error::Catalog(format!(
                        "action `{name}`: field `{fname}` is listed twice"
                    )));
                }
                fields.push(FieldSpec {
                    name: Arc::from(fname),
                    rule,
                });
            }
            fields.sort_by(|a, b| a.name.cmp(&b.name));
            let reference = a.reference.unwrap_or_else(|| "referencia_intencao".into());
            if !fields.iter().any(|f| *f.name == *reference) {
                return Err(Error::Catalog(format!(
                    "action `{name}`: the reference field `{reference}` must be one of its fields"
                )));
            }
            if let Some(c) = &a.customer {
                if !fields.iter().any(|f| *f.name == **c) {
                    return Err(Error::Catalog(format!(
                        "action `{name}`: the customer field `{c}` must be one of its fields"
                    )));
                }
            }
            let minor = fields.iter().any(|f| f.rule == Rule::MoneyMinor);
            let currency = match (&a.currency, &a.currency_field, minor) {
                (None, None, false) => None,
                (_, _, false) => {
                    return Err(Error::Catalog(format!(
                        "action `{name}`: `currency` and `currency_field` are read only by the rule `money_minor`, which no field of the action names"
                    )))
                }
                (None, None, true) | (Some(_), Some(_), true) => {
                    return Err(Error::Catalog(format!(
                        "action `{name}`: a `money_minor` field needs the currency: give `currency = \"BHD\"` (one currency for every key) or `currency_field = \"currency\"` (the payload names it), one of the two"
                    )))
                }
                (Some(code), None, true) => Some(
                    crate::currency::Currency::from_code(code).ok_or_else(|| {
                        Error::Catalog(format!(
                            "action `{name}`: `currency`: {}",
                            crate::currency::not_a_currency(code)
                        ))
                    })?,
                ),
                (None, Some(field), true) => {
                    if !fields.iter().any(|f| *f.name == **field) {
                        return Err(Error::Catalog(format!(
                            "action `{name}`: the currency field `{field}` must be one of its fields (an amount in another currency is another key)"
                        )));
                    }
                    None
                }
            };
            actions.insert(
                name,
                ActionSpec {
                    action,
                    rules_version,
                    reference,
                    pix_type_field: a.pix_type_field,
                    customer: a.customer,
                    currency,
                    currency_field: a.currency_field,
                    fields,
                },
            );
        }
        Ok(Self { actions })
    }

    /// The recipe of an action type.
    pub fn action(&self, name: &str) -> Result<&ActionSpec, Error> {
        self.actions.get(name).ok_or_else(|| Error::UnknownAction {
            action: name.to_owned(),
        })
    }

    /// Every action, by name.
    pub fn actions(&self) -> impl Iterator<Item = &ActionSpec> {
        self.actions.values()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_loads() {
        let c = Catalog::builtin();
        let pix = c.action("pix.cobranca").unwrap();
        let names: Vec<_> = pix.fields().iter().map(|f| &*f.name).collect();
        assert_eq!(
            names,
            [
                "chave_pix_destino",
                "cliente_id",
                "referencia_intencao",
                "valor"
            ]
        );
        assert_eq!(pix.rules_version, RulesVersion::V1);
        assert!(c.action("email.cobranca").is_ok());
        assert!(matches!(c.action("nope"), Err(Error::UnknownAction { .. })));
    }

    #[test]
    fn bad_catalogs_are_refused_with_names() {
        let unknown = r#"[actions."a.b"]
fields = [{ name = "x", rule = "shout" }]
reference = "x""#;
        let e = Catalog::from_toml(unknown).unwrap_err().to_string();
        assert!(
            e.contains("a.b") && e.contains("`x`") && e.contains("shout"),
            "{e}"
        );

        let empty = "[actions.\"a.b\"]\nfields = []";
        assert!(Catalog::from_toml(empty)
            .unwrap_err()
            .to_string()
            .contains("no fields"));

        let norule = "[actions.\"a.b\"]\nreference = \"x\"\nfields = [{ name = \"x\" }]";
        assert!(Catalog::from_toml(norule)
            .unwrap_err()
            .to_string()
            .contains("has no rule"));

        let v9 = "[actions.\"a.b\"]\nrules_version = 9\nreference = \"x\"\nfields = [{ name = \"x\", rule = \"trim\" }]";
        assert!(Catalog::from_toml(v9)
            .unwrap_err()
            .to_string()
            .contains("rules version 9"));

        let noref = "[actions.\"a.b\"]\nfields = [{ name = \"x\", rule = \"trim\" }]";
        assert!(Catalog::from_toml(noref)
            .unwrap_err()
            .to_string()
            .contains("reference field"));

        let nocustomer = "[actions.\"a.b\"]\nreference = \"x\"\ncustomer = \"who\"\nfields = [{ name = \"x\", rule = \"trim\" }]";
        assert!(Catalog::from_toml(nocustomer)
            .unwrap_err()
            .to_string()
            .contains("customer field `who`"));
        let builtin = Catalog::builtin();
        let pix = builtin.action("pix.cobranca").unwrap();
        assert_eq!(pix.customer.as_deref(), Some("cliente_id"));
        assert_eq!(pix.amount_field(), Some("valor"));
        assert_eq!(
            builtin.action("email.cobranca").unwrap().amount_field(),
            None
        );

        assert!(Catalog::from_toml("[actions.\"a.b\"]\ncolour = 1").is_err());
        assert!(Catalog::from_toml("").is_err());
    }
}
