//! Key derivation: canonical JSON of the normalized fields, HMAC-SHA256.
//!
//! The canonical form is `{"a":<action>,"p":{<field>:<value>,...},"t":<tenant>,"v":<n>}`:
//! keys sorted, no whitespace, non-ASCII written as UTF-8, every value a JSON
//! string. Any language with HMAC-SHA256 and a JSON writer reproduces it
//! (Python: `json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)`).

use crate::catalog::{ActionSpec, Catalog, RulesVersion};
use crate::normalize;
use crate::{Error, Payload, Secret, TenantId};
use hmac::{Hmac, Mac};
use sha2::Sha256;
use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;

/// The keyed HMAC state, prepared once and cloned per key (cloning copies
/// two SHA-256 states; re-keying would hash the secret again every time).
#[derive(Clone)]
pub struct KeyDeriver {
    mac: Hmac<Sha256>,
}

impl fmt::Debug for KeyDeriver {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("KeyDeriver([redacted])")
    }
}

/// A derived key: 64 lowercase hexadecimal characters.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
#[serde(try_from = "String")]
pub struct IdempotencyKey(String);

impl IdempotencyKey {
    /// The key as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl TryFrom<String> for IdempotencyKey {
    type Error = Error;
    fn try_from(s: String) -> Result<Self, Error> {
        Self::try_from(s.as_str())
    }
}

impl TryFrom<&str> for IdempotencyKey {
    type Error = Error;
    fn try_from(s: &str) -> Result<Self, Error> {
        if s.len() == 64
            && s.bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        {
            Ok(Self(s.to_owned()))
        } else {
            Err(Error::Payload(
                "a key is 64 lowercase hexadecimal characters".into(),
            ))
        }
    }
}

impl fmt::Display for IdempotencyKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for IdempotencyKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "IdempotencyKey({})", self.0)
    }
}

/// The normalized fields of one action, sorted by name: what gets frozen in
/// the intent record and hashed into the key.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct NormalizedPayload {
    fields: Vec<(Arc<str>, String)>,
}

impl NormalizedPayload {
    /// `(name, normalized value)` pairs, sorted by name.
    pub fn fields(&self) -> &[(Arc<str>, String)] {
        &self.fields
    }

    fn pairs(&self) -> impl Iterator<Item = (&str, &str)> {
        self.fields.iter().map(|(k, v)| (&**k, v.as_str()))
    }

    /// One field's normalized value.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.fields
            .iter()
            .find(|(k, _)| &**k == name)
            .map(|(_, v)| v.as_str())
    }

    /// The fields as a JSON object (sorted, compact), for storage.
    pub fn to_json(&self) -> String {
        let mut out = Vec::with_capacity(64);
        write_fields(&mut out, self.pairs());
        // Only valid UTF-8 was written.
        String::from_utf8(out).unwrap_or_default()
    }

    /// Reads back a stored frozen payload (a JSON object of strings).
    pub fn from_json(text: &str) -> Result<Self, Error> {
        let map: std::collections::BTreeMap<String, String> =
            serde_json::from_str(text).map_err(|e| Error::Payload(e.to_string()))?;
        Ok(Self {
            fields: map.into_iter().map(|(k, v)| (Arc::from(k), v)).collect(),
        })
    }
}

impl serde::Serialize for NormalizedPayload {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(Some(self.fields.len()))?;
        for (k, v) in &self.fields {
            m.serialize_entry(&**k, v)?;
        }
        m.end()
    }
}

/// The outcome of a derivation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Derived {
    /// The key.
    pub key: IdempotencyKey,
    /// The rules version it was derived with.
    pub rules_version: RulesVersion,
    /// The normalized fields it was derived from.
    pub normalized: NormalizedPayload,
}

impl Derived {
    /// The normalized intent reference (the catalog's reference field).
    pub fn reference<'a>(&'a self, spec: &ActionSpec) -> &'a str {
        self.normalized.get(&spec.reference).unwrap_or_default()
    }
}

/// Where canonical bytes go.
trait Sink {
    fn put(&mut self, bytes: &[u8]);
}

impl Sink for Vec<u8> {
    fn put(&mut self, bytes: &[u8]) {
        self.extend_from_slice(bytes);
    }
}

/// Writes a JSON string exactly as Python's `json.dumps(ensure_ascii=False)`
/// and serde_json do: `"` and `\` escaped, control characters as `\n`-style
/// escapes or `\u00XX` in lowercase hex, everything else verbatim UTF-8.
fn write_str<S: Sink>(out: &mut S, s: &str) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let bytes = s.as_bytes();
    out.put(b"\"");
    // Nearly every value needs no escape: copy it whole.
    // A fold without early exit, so the compiler can check 32 bytes at a time.
    let needs_escape = bytes.iter().fold(false, |acc, &b| {
        acc | (b < 0x20) | (b == b'"') | (b == b'\\')
    });
    if !needs_escape {
        out.put(bytes);
        out.put(b"\"");
        return;
    }
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let esc: &[u8] = match b {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            b'\n' => b"\\n",
            b'\r' => b"\\r",
            b'\t' => b"\\t",
            0x08 => b"\\b",
            0x0c => b"\\f",
            0x00..=0x1f => b"",
            _ => continue,
        };
        out.put(&bytes[start..i]);
        if esc.is_empty() {
            out.put(&[
                b'\\',
                b'u',
                b'0',
                b'0',
                HEX[(b >> 4) as usize],
                HEX[(b & 15) as usize],
            ]);
        } else {
            out.put(esc);
        }
        start = i + 1;
    }
    out.put(&bytes[start..]);
    out.put(b"\"");
}

/// Lowercase hex of a digest, without the per-character iterator of `hex`.
pub(crate) fn to_hex(bytes: &[u8]) -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut out = Vec::with_capacity(bytes.len() * 2);
    for &b in bytes {
        out.push(HEX[(b >> 4) as usize]);
        out.push(HEX[(b & 15) as usize]);
    }
    // Only ASCII hex digits were pushed.
    String::from_utf8(out).unwrap_or_default()
}

fn write_fields<'a, S: Sink>(out: &mut S, fields: impl Iterator<Item = (&'a str, &'a str)>) {
    out.put(b"{");
    for (i, (k, v)) in fields.enumerate() {
        if i > 0 {
            out.put(b",");
        }
        write_str(out, k);
        out.put(b":");
        write_str(out, v);
    }
    out.put(b"}");
}

fn write_canonical<'a, S: Sink>(
    out: &mut S,
    tenant: &str,
    action: &str,
    version: RulesVersion,
    fields: impl Iterator<Item = (&'a str, &'a str)>,
    superseding: Option<Generation>,
) {
    out.put(b"{\"a\":");
    write_str(out, action);
    out.put(b",\"p\":");
    write_fields(out, fields);
    if let Some(g) = superseding {
        // Present only for an intent that superseded another: every other
        // key is derived from exactly the bytes it always was.
        out.put(b",\"s\":");
        write_str(out, &g.0.to_string());
    }
    out.put(b",\"t\":");
    write_str(out, tenant);
    out.put(match version {
        RulesVersion::V1 => b",\"v\":1}",
        RulesVersion::V2 => b",\"v\":2}",
    });
}

/// Which supersession of an intent a key stands for: the intent's revision
/// that superseded a failed one (2 or more). An intent that never
/// superseded another has none, and its key is the plain derivation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Generation(u32);

impl TryFrom<i64> for Generation {
    type Error = Error;
    fn try_from(revision: i64) -> Result<Self, Error> {
        u32::try_from(revision)
            .ok()
            .filter(|r| *r >= 2)
            .map(Self)
            .ok_or_else(|| Error::Payload("a superseding revision is 2 or more".into()))
    }
}

/// The canonical JSON bytes that are hashed, for documentation and for
/// checking another language's implementation.
pub fn canonical_json(
    tenant: &TenantId,
    action: &str,
    version: RulesVersion,
    normalized: &NormalizedPayload,
) -> String {
    canonical_json_superseding(tenant, action, version, normalized, None)
}

/// [`canonical_json`] of an intent that superseded another: `"s"` (the
/// superseding revision, as a string) sits between `"p"` and `"t"`.
pub fn canonical_json_superseding(
    tenant: &TenantId,
    action: &str,
    version: RulesVersion,
    normalized: &NormalizedPayload,
    superseding: Option<Generation>,
) -> String {
    let mut out = Vec::with_capacity(256);
    write_canonical(
        &mut out,
        tenant.as_str(),
        action,
        version,
        normalized.pairs(),
        superseding,
    );
    String::from_utf8(out).unwrap_or_default()
}

impl KeyDeriver {
    /// Prepares the keyed HMAC state.
    pub fn new(secret: &Secret) -> Self {
        // HMAC accepts keys of any length; this cannot fail.
        let mac = <Hmac<Sha256> as Mac>::new_from_slice(secret.expose())
            .unwrap_or_else(|_| unreachable!());
        Self { mac }
    }

    /// A check value of the secret: HMAC-SHA256 under it of a fixed label,
    /// as lowercase hex. Two deployments with the same value share the
    /// secret; the value reveals nothing of the secret itself, so it may be
    /// stored beside the data (an instance started with another secret can
    /// then refuse to run instead of deriving other keys).
    pub fn secret_check(&self) -> String {
        let mut mac = self.mac.clone();
        mac.update(b"idem secret check v1");
        to_hex(&mac.finalize().into_bytes())
    }

    /// The key of already-normalized fields.
    pub fn key(
        &self,
        tenant: &TenantId,
        action: &str,
        version: RulesVersion,
        normalized: &NormalizedPayload,
    ) -> IdempotencyKey {
        self.hash(tenant.as_str(), action, version, normalized.pairs())
    }

    /// The key of an intent that superseded a failed one at revision
    /// `superseding`: its own key, never the one the failed action holds.
    pub fn key_superseding(
        &self,
        tenant: &TenantId,
        action: &str,
        version: RulesVersion,
        normalized: &NormalizedPayload,
        superseding: Generation,
    ) -> IdempotencyKey {
        self.hash_as(
            tenant.as_str(),
            action,
            version,
            normalized.pairs(),
            Some(superseding),
        )
    }

    fn hash<'a>(
        &self,
        tenant: &str,
        action: &str,
        version: RulesVersion,
        fields: impl Iterator<Item = (&'a str, &'a str)>,
    ) -> IdempotencyKey {
        self.hash_as(tenant, action, version, fields, None)
    }

    fn hash_as<'a>(
        &self,
        tenant: &str,
        action: &str,
        version: RulesVersion,
        fields: impl Iterator<Item = (&'a str, &'a str)>,
        superseding: Option<Generation>,
    ) -> IdempotencyKey {
        // One buffer, one MAC update: many small updates cost more than the
        // copy into the buffer.
        let mut buf = Vec::with_capacity(256);
        write_canonical(&mut buf, tenant, action, version, fields, superseding);
        let mut mac = self.mac.clone();
        mac.update(&buf);
        IdempotencyKey(to_hex(&mac.finalize().into_bytes()))
    }

    /// Like [`derive`](Self::derive), for callers that need only the key:
    /// no normalized payload is built, so nothing shared is touched (worker
    /// threads would otherwise contend on the field names' reference counts).
    pub fn derive_key(
        &self,
        catalog: &Catalog,
        tenant: &TenantId,
        action: &str,
        payload: &Payload<'_>,
        version: Option<RulesVersion>,
    ) -> Result<(IdempotencyKey, RulesVersion), Error> {
        let (spec, rules_version, values) = prepare(catalog, action, payload, version)?;
        Ok((
            self.hash_values(tenant, spec, rules_version, &values),
            rules_version,
        ))
    }

    /// Normalizes a candidate payload with its action's rules and derives its
    /// key. `version` overrides the catalog's rules version when given.
    pub fn derive(
        &self,
        catalog: &Catalog,
        tenant: &TenantId,
        action: &str,
        payload: &Payload<'_>,
        version: Option<RulesVersion>,
    ) -> Result<Derived, Error> {
        let (spec, rules_version, values) = prepare(catalog, action, payload, version)?;
        let key = self.hash_values(tenant, spec, rules_version, &values);
        Ok(Derived {
            key,
            rules_version,
            normalized: with_names(spec, values),
        })
    }

    fn hash_values(
        &self,
        tenant: &TenantId,
        spec: &ActionSpec,
        version: RulesVersion,
        values: &[Cow<'_, str>],
    ) -> IdempotencyKey {
        let pairs = spec
            .fields()
            .iter()
            .zip(values)
            .map(|(f, v)| (&*f.name, v.as_ref()));
        self.hash(tenant.as_str(), spec.action.as_str(), version, pairs)
    }
}

/// The action's recipe, the rules version in force and the normalized values.
fn prepare<'c, 'p>(
    catalog: &'c Catalog,
    action: &str,
    payload: &Payload<'p>,
    version: Option<RulesVersion>,
) -> Result<(&'c ActionSpec, RulesVersion, Vec<Cow<'p, str>>), Error> {
    let spec = catalog.action(action)?;
    let rules_version = version.unwrap_or(spec.rules_version);
    let values = normalize_values(spec, rules_version, payload)?;
    Ok((spec, rules_version, values))
}

/// Applies an action's rules to a candidate payload. Fields outside the
/// action's list are ignored: they can never change the key.
pub fn normalize_payload(
    spec: &ActionSpec,
    version: RulesVersion,
    payload: &Payload<'_>,
) -> Result<NormalizedPayload, Error> {
    normalize_values(spec, version, payload).map(|values| with_names(spec, values))
}

/// Pairs the values with the spec's field names.
fn with_names(spec: &ActionSpec, values: Vec<Cow<'_, str>>) -> NormalizedPayload {
    let fields = spec
        .fields()
        .iter()
        .map(|f| Arc::clone(&f.name))
        .zip(values.into_iter().map(Cow::into_owned))
        .collect();
    NormalizedPayload { fields }
}

/// The normalized values, in the spec's (sorted) field order.
fn normalize_values<'p>(
    spec: &ActionSpec,
    version: RulesVersion,
    payload: &Payload<'p>,
) -> Result<Vec<Cow<'p, str>>, Error> {
    let mut values = Vec::with_capacity(spec.fields().len());
    for f in spec.fields() {
        let value = payload.get(&f.name).ok_or_else(|| Error::MissingField {
            action: spec.action.to_string(),
            field: f.name.to_string(),
        })?;
        values.push(normalize::apply(spec, version, f, value, payload)?);
    }
    Ok(values)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn deriver() -> KeyDeriver {
        KeyDeriver::new(&Secret::new(b"vetor-publico-nao-e-segredo".to_vec()).unwrap())
    }

    #[test]
    fn the_secret_check_depends_on_the_secret_only() {
        let d = |s: &[u8]| KeyDeriver::new(&Secret::new(s.to_vec()).unwrap());
        assert_eq!(d(b"one").secret_check(), d(b"one").secret_check());
        assert_ne!(d(b"one").secret_check(), d(b"two").secret_check());
        assert_eq!(d(b"one").secret_check().len(), 64);
        assert!(
            !d(b"one").secret_check().contains("6f6e65"),
            "not the secret's bytes"
        );
    }

    #[test]
    fn canonical_form_is_python_compatible() {
        let c = Catalog::builtin();
        let t = TenantId::try_from("loja-do-zé").unwrap();
        let p = Payload::from_json(
            r#"{"cliente_id":"a\"b\n\u0001","referencia_intencao":" R1 ","template":" X "}"#,
        )
        .unwrap();
        let d = deriver()
            .derive(&c, &t, "email.cobranca", &p, None)
            .unwrap();
        assert_eq!(
            canonical_json(&t, "email.cobranca", d.rules_version, &d.normalized),
            "{\"a\":\"email.cobranca\",\"p\":{\"cliente_id\":\"a\\\"b\\n\\u0001\",\"referencia_intencao\":\"R1\",\"template\":\"x\"},\"t\":\"loja-do-zé\",\"v\":1}"
        );
        assert_eq!(d.key.as_str().len(), 64);
    }

    /// A superseding intent's key has `"s"` between `"p"` and `"t"`, and
    /// differs from the plain one and from another revision's; the plain
    /// derivation's bytes do not change.
    #[test]
    fn a_superseding_key_is_its_own_and_the_plain_one_unchanged() {
        let c = Catalog::builtin();
        let t = TenantId::try_from("t").unwrap();
        let p =
            Payload::from_json(r#"{"cliente_id":"c","referencia_intencao":"r","template":"x"}"#)
                .unwrap();
        let d = deriver()
            .derive(&c, &t, "email.cobranca", &p, None)
            .unwrap();
        let two = Generation::try_from(2).unwrap();
        assert_eq!(
            canonical_json_superseding(&t, "email.cobranca", d.rules_version, &d.normalized, Some(two)),
            "{\"a\":\"email.cobranca\",\"p\":{\"cliente_id\":\"c\",\"referencia_intencao\":\"r\",\"template\":\"x\"},\"s\":\"2\",\"t\":\"t\",\"v\":1}"
        );
        let k2 =
            deriver().key_superseding(&t, "email.cobranca", d.rules_version, &d.normalized, two);
        let k3 = deriver().key_superseding(
            &t,
            "email.cobranca",
            d.rules_version,
            &d.normalized,
            Generation::try_from(3).unwrap(),
        );
        assert_ne!(k2, d.key);
        assert_ne!(k2, k3);
        assert_eq!(
            deriver().key(&t, "email.cobranca", d.rules_version, &d.normalized),
            d.key
        );
        assert!(Generation::try_from(1).is_err() && Generation::try_from(-2).is_err());
    }

    #[test]
    fn typed_errors_name_action_and_field() {
        let c = Catalog::builtin();
        let t = TenantId::try_from("t").unwrap();
        let p = Payload::from_json(r#"{"cliente_id":"c","valor":"10.001","chave_pix_destino":"x","referencia_intencao":"r"}"#).unwrap();
        let e = deriver()
            .derive(&c, &t, "pix.cobranca", &p, None)
            .unwrap_err();
        assert!(
            matches!(&e, Error::BadAmount { field, action, .. } if field == "valor" && action == "pix.cobranca"),
            "{e}"
        );
        let p = Payload::from_json(r#"{"cliente_id":"c","valor":"1"}"#).unwrap();
        let e = deriver()
            .derive(&c, &t, "pix.cobranca", &p, None)
            .unwrap_err();
        assert!(
            matches!(&e, Error::MissingField { field, .. } if field == "chave_pix_destino"),
            "{e}"
        );
        let p =
            Payload::from_json(r#"{"cliente_id":true,"referencia_intencao":"r","template":"x"}"#)
                .unwrap();
        let e = deriver()
            .derive(&c, &t, "email.cobranca", &p, None)
            .unwrap_err();
        assert!(
            e.to_string().contains("cliente_id") && e.to_string().contains("boolean"),
            "{e}"
        );
    }

    #[test]
    fn key_is_hmac_of_the_canonical_form_even_when_large() {
        let long = "x".repeat(2000);
        let n = NormalizedPayload {
            fields: vec![(Arc::from("a"), long.clone())],
        };
        let t = TenantId::try_from("t").unwrap();
        let key = deriver().key(&t, "act", RulesVersion::V1, &n);
        let canonical = canonical_json(&t, "act", RulesVersion::V1, &n);
        let mut mac =
            <Hmac<Sha256> as Mac>::new_from_slice(b"vetor-publico-nao-e-segredo").unwrap();
        mac.update(canonical.as_bytes());
        assert_eq!(key.as_str(), to_hex(&mac.finalize().into_bytes()));
    }

    #[test]
    fn money_minor_keys_every_digit_of_the_currency_and_refuses_below_it() {
        let c = Catalog::from_toml(
            r#"
[actions."dinar.charge"]
currency = "BHD"
fields = [{ name = "amount", rule = "money_minor" }, { name = "referencia_intencao", rule = "trim" }]
[actions."any.charge"]
currency_field = "currency"
fields = [
  { name = "amount", rule = "money_minor" },
  { name = "currency", rule = "trim" },
  { name = "referencia_intencao", rule = "trim" },
]
"#,
        )
        .unwrap();
        let t = TenantId::try_from("t").unwrap();
        let key = |action: &str, json: &str| {
            let p = Payload::from_json(json).unwrap();
            deriver().derive(&c, &t, action, &p, None)
        };
        let dinars = |amount: &str| {
            key(
                "dinar.charge",
                &format!(r#"{{"amount":{amount},"referencia_intencao":"r"}}"#),
            )
        };
        // 12.345 and 12.346 dinars: two keys; the same amount spelled
        // three ways: one.
        let a = dinars("\"12.345\"").unwrap();
        assert_ne!(a.key, dinars("\"12.346\"").unwrap().key);
        assert_eq!(a.key, dinars("12.345").unwrap().key);
        assert_eq!(a.key, dinars("\"12.3450\"").unwrap().key);
        assert_eq!(a.normalized.get("amount"), Some("12345"));
        // Below the fils: refused, naming the currency, never rounded.
        let e = dinars("\"12.3456\"").unwrap_err().to_string();
        assert!(e.contains("BHD") && e.contains("3 decimals"), "{e}");
        assert!(dinars("\"-1\"").is_err());
        // The currency from the payload: yen have no decimals, the UF four.
        let any = |amount: &str, cur: &str| {
            key(
                "any.charge",
                &format!(r#"{{"amount":"{amount}","currency":"{cur}","referencia_intencao":"r"}}"#),
            )
        };
        assert_eq!(
            any("1500", "JPY").unwrap().normalized.get("amount"),
            Some("1500")
        );
        assert!(any("1500.5", "JPY").is_err());
        assert_eq!(
            any("1.2345", "CLF").unwrap().normalized.get("amount"),
            Some("12345")
        );
        assert_ne!(
            any("12.34", "USD").unwrap().key,
            any("12.34", "EUR").unwrap().key
        );
        let withdrawn = any("1", "SLL").unwrap_err().to_string();
        assert!(withdrawn.contains("SLE"), "{withdrawn}");
        // A money_minor field needs its currency, from one place.
        for bad in [
            r#"[actions."a.b"]
fields = [{ name = "amount", rule = "money_minor" }, { name = "referencia_intencao", rule = "trim" }]"#,
            r#"[actions."a.b"]
currency = "BHD"
currency_field = "c"
fields = [{ name = "amount", rule = "money_minor" }, { name = "c", rule = "trim" }, { name = "referencia_intencao", rule = "trim" }]"#,
            r#"[actions."a.b"]
currency_field = "c"
fields = [{ name = "amount", rule = "money_minor" }, { name = "referencia_intencao", rule = "trim" }]"#,
            r#"[actions."a.b"]
currency = "HRK"
fields = [{ name = "amount", rule = "money_minor" }, { name = "referencia_intencao", rule = "trim" }]"#,
        ] {
            assert!(Catalog::from_toml(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn derive_key_agrees_with_derive() {
        let c = Catalog::builtin();
        let t = TenantId::try_from("t").unwrap();
        let p = Payload::from_json(r#"{"cliente_id":"c","valor":1,"chave_pix_destino":"a@b.com","referencia_intencao":"r"}"#).unwrap();
        for v in [None, Some(RulesVersion::V2)] {
            let full = deriver().derive(&c, &t, "pix.cobranca", &p, v).unwrap();
            let (key, version) = deriver().derive_key(&c, &t, "pix.cobranca", &p, v).unwrap();
            assert_eq!((key, version), (full.key, full.rules_version));
        }
    }

    #[test]
    fn frozen_payload_round_trips() {
        let n = NormalizedPayload {
            fields: vec![(Arc::from("a"), "é\"".into()), (Arc::from("b"), "2".into())],
        };
        assert_eq!(NormalizedPayload::from_json(&n.to_json()).unwrap(), n);
    }
}
