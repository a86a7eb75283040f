//! serde for [`ClassifyConfig`] and [`Rule`], written by hand so that only the
//! differences from the defaults are written and reading needs no allocation.
//!
//! ```toml
//! honor_should_retry = true
//! malformed_body = { class = "malformed_body", scope = "endpoint", retryable = false }
//! status = { "404" = { class = "not_found", scope = "endpoint", retryable = true } }
//! error_kind = { insufficient_quota = { retryable = false }, invalid_request_error = "status" }
//! transport = { tls = { class = "connect", scope = "endpoint", retryable = false } }
//! error_code = { model_overloaded = { class = "overloaded", scope = "endpoint", retryable = true } }
//! ```
//!
//! A rule read over an existing one may omit fields (they keep the existing values);
//! an error kind may be set to the string `"status"`, meaning the status rule applies.
//! An `error_code` (another provider's `error.code` or `error.type` value) has no
//! existing rule: all three fields are needed.

use super::{
    ClassifyConfig, ErrorKind, MAX_CODE_LEN, Rule, STATUS_MAX, STATUS_MIN, TRANSPORT_KINDS,
};
use crate::outcome::TransportKind;
use core::fmt;
use serde::de::{self, DeserializeSeed, MapAccess, Visitor};
use serde::ser::{SerializeMap, Serializer};
use serde::{Deserialize, Deserializer, Serialize};

const CONFIG_FIELDS: &[&str] = &[
    "honor_should_retry",
    "malformed_body",
    "unexpected_status",
    "oversized_body",
    "status",
    "error_kind",
    "transport",
    "error_code",
];
const RULE_FIELDS: &[&str] = &["class", "scope", "retryable"];
/// What an error kind set to this string means: no rule of its own.
const STATUS_WORD: &str = "status";

impl Serialize for ClassifyConfig {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let default = ClassifyConfig::default();
        let mut map = s.serialize_map(None)?;
        if self.honor_should_retry != default.honor_should_retry {
            map.serialize_entry("honor_should_retry", &self.honor_should_retry)?;
        }
        if self.malformed_body != default.malformed_body {
            map.serialize_entry("malformed_body", &self.malformed_body)?;
        }
        if self.unexpected_status != default.unexpected_status {
            map.serialize_entry("unexpected_status", &self.unexpected_status)?;
        }
        if self.oversized_body != default.oversized_body {
            map.serialize_entry("oversized_body", &self.oversized_body)?;
        }
        if self.status != default.status {
            map.serialize_entry("status", &StatusDiff(self))?;
        }
        if self.error_kind != default.error_kind {
            map.serialize_entry("error_kind", &KindDiff(self))?;
        }
        if self.transport != default.transport {
            map.serialize_entry("transport", &TransportDiff(self))?;
        }
        if !self.error_codes.is_empty() {
            map.serialize_entry("error_code", &CodeList(self))?;
        }
        map.end()
    }
}

struct StatusDiff<'a>(&'a ClassifyConfig);

impl Serialize for StatusDiff<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(None)?;
        for status in STATUS_MIN..=STATUS_MAX {
            let Some(rule) = self.0.status_rule(status) else {
                continue;
            };
            if rule != ClassifyConfig::default_status_rule(status) {
                let digits = three_digits(status);
                let key = core::str::from_utf8(&digits).unwrap_or_default();
                map.serialize_entry(key, &rule)?;
            }
        }
        map.end()
    }
}

/// `status` (always 400..=599 here) as three ASCII digits.
fn three_digits(status: u16) -> [u8; 3] {
    let digit = |n: u16| b'0'.saturating_add(u8::try_from(n % 10).unwrap_or(0));
    [digit(status / 100), digit(status / 10), digit(status)]
}

struct KindDiff<'a>(&'a ClassifyConfig);

impl Serialize for KindDiff<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(None)?;
        for kind in ErrorKind::ALL {
            let rule = self.0.error_kind_rule(kind);
            if rule == ClassifyConfig::default_error_kind_rule(kind) {
                continue;
            }
            match rule {
                Some(rule) => map.serialize_entry(&kind, &rule)?,
                None => map.serialize_entry(&kind, STATUS_WORD)?,
            }
        }
        map.end()
    }
}

struct TransportDiff<'a>(&'a ClassifyConfig);

impl Serialize for TransportDiff<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(None)?;
        for kind in TRANSPORT_KINDS {
            let rule = self.0.transport_rule(kind);
            if rule != ClassifyConfig::default_transport_rule(kind) {
                map.serialize_entry(&kind, &rule)?;
            }
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for ClassifyConfig {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<ClassifyConfig, D::Error> {
        d.deserialize_map(ConfigVisitor)
    }
}

struct ConfigVisitor;

impl<'de> Visitor<'de> for ConfigVisitor {
    type Value = ClassifyConfig;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("classification rules")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<ClassifyConfig, A::Error> {
        let mut cfg = ClassifyConfig::default();
        let mut seen = [false; 8];
        while let Some(field) = map.next_key_seed(Field(CONFIG_FIELDS))? {
            if let Some(seen) = seen.get_mut(field) {
                if *seen {
                    let name = CONFIG_FIELDS.get(field).copied().unwrap_or_default();
                    return Err(de::Error::duplicate_field(name));
                }
                *seen = true;
            }
            match field {
                0 => cfg.honor_should_retry = map.next_value()?,
                1 => {
                    cfg.malformed_body = map.next_value_seed(RuleSeed(Some(cfg.malformed_body)))?
                }
                2 => {
                    let base = Some(cfg.unexpected_status);
                    cfg.unexpected_status = map.next_value_seed(RuleSeed(base))?;
                }
                3 => {
                    let base = Some(cfg.oversized_body);
                    cfg.oversized_body = map.next_value_seed(RuleSeed(base))?;
                }
                4 => map.next_value_seed(StatusTable(&mut cfg))?,
                5 => map.next_value_seed(KindTable(&mut cfg))?,
                6 => map.next_value_seed(TransportTable(&mut cfg))?,
                _ => map.next_value_seed(CodeTable(&mut cfg))?,
            }
        }
        Ok(cfg)
    }
}

/// A field name, read as its index in a list of known names.
struct Field(&'static [&'static str]);

impl<'de> DeserializeSeed<'de> for Field {
    type Value = usize;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<usize, D::Error> {
        d.deserialize_identifier(self)
    }
}

impl Visitor<'_> for Field {
    type Value = usize;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a field name")
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<usize, E> {
        self.0
            .iter()
            .position(|name| *name == v)
            .ok_or_else(|| E::unknown_field(v, self.0))
    }
}

impl<'de> Deserialize<'de> for Rule {
    /// A standalone rule must name all three fields.
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Rule, D::Error> {
        RuleSeed(None).deserialize(d)
    }
}

/// Reads a rule over `base`: fields left out keep the base's values (with no base,
/// every field is required).
struct RuleSeed(Option<Rule>);

impl<'de> DeserializeSeed<'de> for RuleSeed {
    type Value = Rule;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Rule, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for RuleSeed {
    type Value = Rule;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a rule { class, scope, retryable }")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Rule, A::Error> {
        let (mut class, mut scope, mut retryable) = (None, None, None);
        while let Some(field) = map.next_key_seed(Field(RULE_FIELDS))? {
            match field {
                0 if class.is_none() => class = Some(map.next_value()?),
                1 if scope.is_none() => scope = Some(map.next_value()?),
                2 if retryable.is_none() => retryable = Some(map.next_value()?),
                _ => {
                    let name = RULE_FIELDS.get(field).copied().unwrap_or_default();
                    return Err(de::Error::duplicate_field(name));
                }
            }
        }
        let base = self.0;
        Ok(Rule {
            class: class
                .or(base.map(|b| b.class))
                .ok_or_else(|| de::Error::missing_field("class"))?,
            scope: scope
                .or(base.map(|b| b.scope))
                .ok_or_else(|| de::Error::missing_field("scope"))?,
            retryable: retryable
                .or(base.map(|b| b.retryable))
                .ok_or_else(|| de::Error::missing_field("retryable"))?,
        })
    }
}

/// The `status` map, applied over the rules already in the config.
struct StatusTable<'c>(&'c mut ClassifyConfig);

impl<'de> DeserializeSeed<'de> for StatusTable<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for StatusTable<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a map from status (\"400\" to \"599\") to rule")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(status) = map.next_key_seed(StatusKey)? {
            let base = self.0.status_rule(status);
            let rule = map.next_value_seed(RuleSeed(base))?;
            self.0.set_status(status, rule).map_err(de::Error::custom)?;
        }
        Ok(())
    }
}

/// A status key, `"404"` (or the integer where the format has integer keys); one
/// outside 400..=599 is an error that names it.
#[derive(Clone, Copy)]
struct StatusKey;

impl<'de> DeserializeSeed<'de> for StatusKey {
    type Value = u16;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<u16, D::Error> {
        d.deserialize_any(self)
    }
}

impl Visitor<'_> for StatusKey {
    type Value = u16;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "a status from {STATUS_MIN} to {STATUS_MAX}, e.g. \"404\""
        )
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<u16, E> {
        v.parse::<u16>()
            .ok()
            .filter(|s| (STATUS_MIN..=STATUS_MAX).contains(s))
            .ok_or_else(|| E::invalid_value(de::Unexpected::Str(v), &self))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<u16, E> {
        u16::try_from(v)
            .ok()
            .filter(|s| (STATUS_MIN..=STATUS_MAX).contains(s))
            .ok_or_else(|| E::invalid_value(de::Unexpected::Unsigned(v), &self))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<u16, E> {
        u64::try_from(v)
            .map_err(|_| E::invalid_value(de::Unexpected::Signed(v), &self))
            .and_then(|v| self.visit_u64(v))
    }
}

/// The `error_kind` map, applied over the rules already in the config.
struct KindTable<'c>(&'c mut ClassifyConfig);

impl<'de> DeserializeSeed<'de> for KindTable<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for KindTable<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a map from error kind to rule or \"status\"")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(kind) = map.next_key::<ErrorKind>()? {
            let base = self.0.error_kind_rule(kind);
            let rule = map.next_value_seed(KindRule(base))?;
            self.0.set_error_kind(kind, rule);
        }
        Ok(())
    }
}

/// An error kind's rule: a rule table over the current one, or `"status"` for none.
struct KindRule(Option<Rule>);

impl<'de> DeserializeSeed<'de> for KindRule {
    type Value = Option<Rule>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Option<Rule>, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for KindRule {
    type Value = Option<Rule>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a rule { class, scope, retryable } or \"status\"")
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Option<Rule>, E> {
        if v == STATUS_WORD {
            Ok(None)
        } else {
            Err(E::invalid_value(de::Unexpected::Str(v), &self))
        }
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Option<Rule>, A::Error> {
        RuleSeed(self.0).visit_map(map).map(Some)
    }
}

/// The `transport` map, applied over the rules already in the config.
struct TransportTable<'c>(&'c mut ClassifyConfig);

impl<'de> DeserializeSeed<'de> for TransportTable<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for TransportTable<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a map from transport kind to rule")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(kind) = map.next_key::<TransportKind>()? {
            let base = Some(self.0.transport_rule(kind));
            let rule = map.next_value_seed(RuleSeed(base))?;
            self.0.set_transport(kind, rule);
        }
        Ok(())
    }
}

/// The named error codes, serialized as a map from name to rule.
struct CodeList<'c>(&'c ClassifyConfig);

impl Serialize for CodeList<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(None)?;
        for (name, rule) in self.0.error_codes.iter() {
            map.serialize_entry(name, &rule)?;
        }
        map.end()
    }
}

/// The `error_code` map: each name with a whole rule, added to the config's codes.
struct CodeTable<'c>(&'c mut ClassifyConfig);

impl<'de> DeserializeSeed<'de> for CodeTable<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for CodeTable<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a map from an error code to a rule { class, scope, retryable }")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(name) = map.next_key_seed(CodeName)? {
            let rule = map.next_value_seed(RuleSeed(None))?;
            self.0
                .error_codes
                .set(name.as_str(), rule)
                .map_err(de::Error::custom)?;
        }
        Ok(())
    }
}

/// An error code name, read into a fixed buffer (nothing allocated).
struct CodeName;

/// A code name of at most [`MAX_CODE_LEN`] bytes.
struct NameBuf {
    bytes: [u8; MAX_CODE_LEN],
    len: usize,
}

impl NameBuf {
    fn as_str(&self) -> &str {
        let bytes = self.bytes.get(..self.len).unwrap_or(&[]);
        core::str::from_utf8(bytes).unwrap_or_default()
    }
}

impl<'de> DeserializeSeed<'de> for CodeName {
    type Value = NameBuf;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<NameBuf, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for CodeName {
    type Value = NameBuf;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "an error code of 1 to {MAX_CODE_LEN} bytes")
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<NameBuf, E> {
        let mut bytes = [0u8; MAX_CODE_LEN];
        match bytes.get_mut(..v.len()) {
            Some(dst) if !v.is_empty() => {
                dst.copy_from_slice(v.as_bytes());
                Ok(NameBuf {
                    bytes,
                    len: v.len(),
                })
            }
            _ => Err(E::invalid_length(v.len(), &self)),
        }
    }
}
