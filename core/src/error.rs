use std::fmt;

/// Everything that can go wrong in idem-core. Every message names the action
/// and field involved so a caller can fix its input without reading code.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// The action type is not in the catalog.
    #[error("unknown action `{action}`: it is not in the catalog")]
    UnknownAction {
        /// The action as given.
        action: String,
    },
    /// A field the action's key depends on is absent from the payload.
    #[error("action `{action}`: field `{field}` is missing from the payload")]
    MissingField {
        /// Action type.
        action: String,
        /// Missing field.
        field: String,
    },
    /// A field has a JSON type its rule cannot take.
    #[error("action `{action}`: field `{field}` must be {expected}, got {got}")]
    FieldType {
        /// Action type.
        action: String,
        /// Offending field.
        field: String,
        /// What the rule accepts.
        expected: &'static str,
        /// What arrived (a JSON type name).
        got: &'static str,
    },
    /// A money field that is not an exact, non-negative amount in cents.
    #[error("action `{action}`: field `{field}` is not a valid amount: {reason}")]
    BadAmount {
        /// Action type.
        action: String,
        /// Offending field.
        field: String,
        /// Why it was refused.
        reason: AmountError,
    },
    /// A Pix destination that is invalid or whose type cannot be told.
    #[error("action `{action}`: field `{field}` is not a valid Pix key: {reason}")]
    BadPixKey {
        /// Action type.
        action: String,
        /// Offending field.
        field: String,
        /// Why it was refused.
        reason: String,
    },
    /// The currency field of an action's `money_minor` amounts names no
    /// current currency.
    #[error("action `{action}`: field `{field}`: {reason}")]
    BadCurrency {
        /// Action type.
        action: String,
        /// The currency field.
        field: String,
        /// Why it was refused (a withdrawn code names its successor).
        reason: String,
    },
    /// JSON that nests deeper than [`crate::json::MAX_DEPTH`].
    #[error("{0}")]
    TooDeep(crate::json::TooDeep),
    /// The payload is not a JSON object.
    #[error("the payload must be a JSON object: {0}")]
    Payload(String),
    /// A tenant id that cannot be used.
    #[error("invalid tenant id: {0}")]
    Tenant(String),
    /// An action type name that cannot be used.
    #[error("invalid action type: {0}")]
    ActionType(String),
    /// The catalog file was rejected at load time.
    #[error("catalog rejected: {0}")]
    Catalog(String),
    /// A rules version that does not exist.
    #[error("unknown rules version {0}: supported versions are 1 and 2")]
    RulesVersion(u32),
    /// The HMAC secret cannot be used.
    #[error("invalid secret: {0}")]
    Secret(String),
    /// A cost-model input that makes no sense.
    #[error("{field}: {reason}")]
    CostInput {
        /// The input's name (a CLI flag or JSON key without dashes).
        field: &'static str,
        /// Why it was refused.
        reason: String,
    },
    /// A number that could not be parsed.
    #[error("`{input}` is not a number{hint}")]
    Number {
        /// What was typed.
        input: String,
        /// A hint, starting with ": " when present.
        hint: String,
    },
    /// A number two locales read differently (`45.000`: 45000 in pt-BR, 45
    /// in en-US), given where no locale says which.
    #[error("`{input}` reads {pt_br} in pt-BR but {en_us} in en-US")]
    AmbiguousNumber {
        /// What was typed.
        input: String,
        /// The pt-BR reading (or why pt-BR cannot read it).
        pt_br: String,
        /// The en-US reading (or why en-US cannot read it).
        en_us: String,
    },
}

/// Why an amount was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AmountError {
    /// Not a decimal number at all.
    NotANumber(String),
    /// Below zero.
    Negative,
    /// A non-zero digit below the cent: it would have to be rounded.
    BelowCent,
    /// More cents than fit in a signed 64-bit integer.
    TooLarge,
    /// A non-zero digit below the currency's smallest unit (`money_minor`).
    BelowMinorUnit {
        /// The currency's code.
        currency: String,
        /// How many decimals its smallest unit has.
        digits: u32,
    },
}

impl fmt::Display for AmountError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AmountError::NotANumber(s) => write!(f, "`{s}` is not a decimal number"),
            AmountError::Negative => f.write_str("it is negative"),
            AmountError::BelowCent => {
                f.write_str("it has a non-zero digit below the cent (idem never rounds money)")
            }
            AmountError::TooLarge => f.write_str("it is too large"),
            AmountError::BelowMinorUnit { currency, digits } => write!(
                f,
                "it has a non-zero digit below {currency}'s smallest unit ({digits} decimals; idem never rounds money)"
            ),
        }
    }
}
