//! Reading JSON fields with errors that name them. A `null` field reads as absent, as
//! both APIs treat it.

use serde_json::{Map, Value};

use super::error::TranslateError;

pub(crate) type Obj = Map<String, Value>;

/// The path of `key` below `base`. A key that a dotted path could misread (empty, or
/// with `.`, `[`, `]` or `"` in it) is written as a JSON string in brackets:
/// `metadata["a.b"]`.
pub(crate) fn at(base: &str, key: &str) -> String {
    if key.is_empty() || key.contains(['.', '[', ']', '"']) {
        return format!("{base}[{}]", Value::from(key));
    }
    if base.is_empty() {
        key.to_owned()
    } else {
        format!("{base}.{key}")
    }
}

/// The path of item `i` of the array at `base`.
pub(crate) fn item(base: &str, i: usize) -> String {
    format!("{base}[{i}]")
}

/// `v` as an object.
pub(crate) fn object<'a>(v: &'a Value, field: &str) -> Result<&'a Obj, TranslateError> {
    v.as_object()
        .ok_or_else(|| TranslateError::invalid(field, "a JSON object"))
}

/// A field's value; `null` is absent.
pub(crate) fn get<'a>(o: &'a Obj, key: &str) -> Option<&'a Value> {
    o.get(key).filter(|v| !v.is_null())
}

/// A string field.
pub(crate) fn opt_str<'a>(
    o: &'a Obj,
    base: &str,
    key: &str,
) -> Result<Option<&'a str>, TranslateError> {
    get(o, key)
        .map(|v| {
            v.as_str()
                .ok_or_else(|| TranslateError::invalid(at(base, key), "a string"))
        })
        .transpose()
}

/// A string field that must be there.
pub(crate) fn req_str<'a>(o: &'a Obj, base: &str, key: &str) -> Result<&'a str, TranslateError> {
    opt_str(o, base, key)?.ok_or_else(|| TranslateError::missing(at(base, key)))
}

/// A non-negative integer field.
pub(crate) fn opt_u64(o: &Obj, base: &str, key: &str) -> Result<Option<u64>, TranslateError> {
    get(o, key)
        .map(|v| {
            v.as_u64()
                .ok_or_else(|| TranslateError::invalid(at(base, key), "a non-negative integer"))
        })
        .transpose()
}

/// A number field.
pub(crate) fn opt_f64(o: &Obj, base: &str, key: &str) -> Result<Option<f64>, TranslateError> {
    get(o, key)
        .map(|v| {
            v.as_f64()
                .ok_or_else(|| TranslateError::invalid(at(base, key), "a number"))
        })
        .transpose()
}

/// A boolean field.
pub(crate) fn opt_bool(o: &Obj, base: &str, key: &str) -> Result<Option<bool>, TranslateError> {
    get(o, key)
        .map(|v| {
            v.as_bool()
                .ok_or_else(|| TranslateError::invalid(at(base, key), "true or false"))
        })
        .transpose()
}

/// An array field.
pub(crate) fn opt_array<'a>(
    o: &'a Obj,
    base: &str,
    key: &str,
) -> Result<Option<&'a Vec<Value>>, TranslateError> {
    get(o, key)
        .map(|v| {
            v.as_array()
                .ok_or_else(|| TranslateError::invalid(at(base, key), "an array"))
        })
        .transpose()
}

/// An object field.
pub(crate) fn opt_object<'a>(
    o: &'a Obj,
    base: &str,
    key: &str,
) -> Result<Option<&'a Obj>, TranslateError> {
    get(o, key).map(|v| object(v, &at(base, key))).transpose()
}

/// Refuses any non-null field of `o` not in `known`: a field this translation does not
/// know might change the answer, so it is never dropped.
pub(crate) fn only(o: &Obj, base: &str, known: &[&str]) -> Result<(), TranslateError> {
    match o
        .iter()
        .find(|(k, v)| !v.is_null() && !known.contains(&k.as_str()))
    {
        Some((k, _)) => Err(TranslateError::untranslatable(
            at(base, k),
            "the other API has no such field",
        )),
        None => Ok(()),
    }
}
