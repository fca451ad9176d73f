//! The macro a scenario's numeric inputs are declared with: one row per
//! field gives its enum variant, its place in `Field::ALL`, its link key,
//! its command-line flag, its kind and where its value lives in the cost
//! inputs. Everything that walks the fields (the link, the form, the CSV,
//! the CLI) reads what it generates, so a field cannot be half-added.
//!
//! A numeric input of [`CostInputs`](crate::cost::CostInputs) or
//! [`RiskInputs`](crate::cost::RiskInputs) that no row names does not
//! build: the generated writer takes both structs apart by name, with no
//! `..`.
//!
//! ```compile_fail,E0027
//! // Every row but `TokensOut`: the cost inputs' `tokens_out` has no field.
//! idem_core::scenario_fields! {
//!     Conversations: "c", "conversations", Count, input conversations;
//!     TokensIn: "ti", "tokens-in", Count, input tokens_in;
//!     CachedShare: "cs", "cached-share", Percent, input cached_share_pct;
//!     Calls: "cl", "calls", Average, input calls_per_conversation;
//!     PriceIn: "pi", "price-in", Money, input price_in;
//!     PriceCached: "pca", "price-cached", Money, input price_cached;
//!     PriceOut: "po", "price-out", Money, input price_out;
//!     Fx: "px", "fx", Rate, rate fx;
//!     Ticket: "tk", "ticket", Money, input ticket;
//!     DuplicateRate: "d", "duplicate-rate", Percent, input duplicate_rate_pct;
//!     DupCacheShare: "dcs", "dup-cache-share", Percent, input dup_cache_share_pct;
//!     MoneyShare: "ms", "money-share", Percent, risk money_share_pct;
//!     AvgCharge: "ac", "avg-charge", Money, risk avg_charge;
//!     OpsCost: "oc", "ops-cost", Money, risk ops_cost;
//!     ClaimRate: "cr", "claim-rate", Percent, risk claim_rate_pct;
//! }
//! ```
//!
//! The full table builds (the same invocation with the row back):
//!
//! ```
//! idem_core::scenario_fields! {
//!     Conversations: "c", "conversations", Count, input conversations;
//!     TokensIn: "ti", "tokens-in", Count, input tokens_in;
//!     CachedShare: "cs", "cached-share", Percent, input cached_share_pct;
//!     TokensOut: "to", "tokens-out", Count, input tokens_out;
//!     Calls: "cl", "calls", Average, input calls_per_conversation;
//!     PriceIn: "pi", "price-in", Money, input price_in;
//!     PriceCached: "pca", "price-cached", Money, input price_cached;
//!     PriceOut: "po", "price-out", Money, input price_out;
//!     Fx: "px", "fx", Rate, rate fx;
//!     Ticket: "tk", "ticket", Money, input ticket;
//!     DuplicateRate: "d", "duplicate-rate", Percent, input duplicate_rate_pct;
//!     DupCacheShare: "dcs", "dup-cache-share", Percent, input dup_cache_share_pct;
//!     MoneyShare: "ms", "money-share", Percent, risk money_share_pct;
//!     AvgCharge: "ac", "avg-charge", Money, risk avg_charge;
//!     OpsCost: "oc", "ops-cost", Money, risk ops_cost;
//!     ClaimRate: "cr", "claim-rate", Percent, risk claim_rate_pct;
//! }
//! assert_eq!(Field::ALL.len(), 16);
//! ```

/// Declares the scenario's fields: `Variant: "link key", "cli-flag", Kind,
/// place slot;` where place is `input` (a number of the cost inputs),
/// `rate` (an optional one) or `risk` (one of the risk block's four).
#[doc(hidden)]
#[macro_export]
macro_rules! scenario_fields {
    ($( $(#[$doc:meta])* $v:ident : $key:literal, $flag:literal, $kind:ident, $place:ident $slot:ident; )*) => {
        /// One numeric input of a scenario.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum Field {
            $( $(#[$doc])* $v, )*
        }

        impl Field {
            /// Every field, in display order (the table's).
            pub const ALL: [Field; [$(stringify!($v)),*].len()] = [$(Field::$v),*];

            /// The field's place in [`ALL`](Self::ALL).
            pub fn index(self) -> usize {
                self as usize
            }

            /// The short query key.
            pub fn key(self) -> &'static str {
                match self { $(Field::$v => $key,)* }
            }

            /// The `idem cost` flag, without its dashes.
            pub fn flag(self) -> &'static str {
                match self { $(Field::$v => $flag,)* }
            }

            /// What kind of number the field holds.
            pub fn kind(self) -> $crate::scenario::Kind {
                match self { $(Field::$v => $crate::scenario::Kind::$kind,)* }
            }

            /// The field's value in cost inputs (`None` for an absent
            /// optional one).
            pub fn get_in(
                self,
                i: &$crate::cost::CostInputs,
            ) -> ::std::option::Option<::rust_decimal::Decimal> {
                match self { $(Field::$v => $crate::__field_get!($place, i, $slot),)* }
            }
        }

        $crate::__field_writer!(@split [] [] [] $($v $place $slot)*);
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __field_get {
    (input, $i:ident, $slot:ident) => {
        ::std::option::Option::Some($i.$slot)
    };
    (rate, $i:ident, $slot:ident) => {
        $i.$slot
    };
    (risk, $i:ident, $slot:ident) => {
        $i.risk.as_ref().map(|r| r.$slot)
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __field_writer {
    (@split [$($iv:ident $is:ident)*] [$($rv:ident $rs:ident)*] [$($kv:ident $ks:ident)*]) => {
        impl Field {
            /// Writes each field's value into the cost inputs: a number
            /// given replaces the input's, an optional one is set as
            /// given, and the risk block exists when all four are given.
            pub fn write_inputs(
                value: impl Fn(Field) -> ::std::option::Option<::rust_decimal::Decimal>,
                inputs: &mut $crate::cost::CostInputs,
            ) {
                // Taken apart by name with no `..`: a numeric input no
                // row names stops the build here.
                let $crate::cost::CostInputs {
                    price_unit: _,
                    price_currency: _,
                    revenue_currency: _,
                    risk,
                    $($is,)*
                    $($rs,)*
                } = inputs;
                $(
                    if let ::std::option::Option::Some(v) = value(Field::$iv) {
                        *$is = v;
                    }
                )*
                $( *$rs = value(Field::$rv); )*
                *risk = (|| {
                    ::std::option::Option::Some($crate::cost::RiskInputs {
                        $($ks: value(Field::$kv)?,)*
                    })
                })();
            }
        }
    };
    (@split [$($i:tt)*] [$($r:tt)*] [$($k:tt)*] $v:ident input $s:ident $($rest:tt)*) => {
        $crate::__field_writer!(@split [$($i)* $v $s] [$($r)*] [$($k)*] $($rest)*);
    };
    (@split [$($i:tt)*] [$($r:tt)*] [$($k:tt)*] $v:ident rate $s:ident $($rest:tt)*) => {
        $crate::__field_writer!(@split [$($i)*] [$($r)* $v $s] [$($k)*] $($rest)*);
    };
    (@split [$($i:tt)*] [$($r:tt)*] [$($k:tt)*] $v:ident risk $s:ident $($rest:tt)*) => {
        $crate::__field_writer!(@split [$($i)*] [$($r)*] [$($k)* $v $s] $($rest)*);
    };
}
