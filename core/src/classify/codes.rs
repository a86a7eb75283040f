//! Error codes of other OpenAI-compatible providers, named in configuration.
//!
//! The [`ErrorKind`](super::ErrorKind)s are the codes OpenAI and Anthropic document.
//! Other providers send their own `error.type` / `error.code` values (say a
//! `model_overloaded` or a `tokens_exhausted`); a configuration names them with a rule
//! each, and a body carrying one is classified by that rule. The table has a fixed
//! capacity and stores each name inline, so the core allocates nothing; a body's values
//! are compared by a 64-bit FNV-1a hash of their unescaped bytes, computed once by the
//! scan (a collision between two names of one config would need 2^32 names).

use super::Rule;
use crate::error::ConfigError;

/// How many error codes one configuration may name.
pub const MAX_ERROR_CODES: usize = 16;

/// The longest error code name, in bytes.
pub const MAX_CODE_LEN: usize = 48;

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

/// The hash the scan and the table compare: FNV-1a over the bytes.
pub(crate) fn hash(bytes: impl IntoIterator<Item = u8>) -> u64 {
    bytes.into_iter().fold(FNV_OFFSET, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(FNV_PRIME)
    })
}

/// One named code and its rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Entry {
    name: [u8; MAX_CODE_LEN],
    len: u8,
    hash: u64,
    rule: Rule,
}

impl Entry {
    fn name(&self) -> &str {
        let bytes = self.name.get(..usize::from(self.len)).unwrap_or(&[]);
        core::str::from_utf8(bytes).unwrap_or_default()
    }
}

/// Error `type` / `code` values of other providers and their rules.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ErrorCodes {
    entries: [Option<Entry>; MAX_ERROR_CODES],
}

impl ErrorCodes {
    /// Sets the rule for the code `name` (replacing an earlier rule for it). Refused
    /// when the name is empty or longer than [`MAX_CODE_LEN`] bytes, or when
    /// [`MAX_ERROR_CODES`] other codes are named already.
    pub fn set(&mut self, name: &str, rule: Rule) -> Result<(), ConfigError> {
        const FIELD: &str = "classify.error_code";
        if name.is_empty() {
            return Err(ConfigError::Empty { field: FIELD });
        }
        let bytes = name.as_bytes();
        if bytes.len() > MAX_CODE_LEN {
            return Err(ConfigError::TooMany {
                field: "classify.error_code (name length)",
                max: MAX_CODE_LEN,
            });
        }
        let h = hash(bytes.iter().copied());
        let mut buf = [0u8; MAX_CODE_LEN];
        if let Some(dst) = buf.get_mut(..bytes.len()) {
            dst.copy_from_slice(bytes);
        }
        let entry = Entry {
            name: buf,
            len: u8::try_from(bytes.len()).unwrap_or(u8::MAX),
            hash: h,
            rule,
        };
        let same = self
            .entries
            .iter()
            .position(|e| e.is_some_and(|e| e.hash == h));
        let free = || self.entries.iter().position(Option::is_none);
        let Some(slot) = same.or_else(free).and_then(|i| self.entries.get_mut(i)) else {
            return Err(ConfigError::TooMany {
                field: FIELD,
                max: MAX_ERROR_CODES,
            });
        };
        *slot = Some(entry);
        Ok(())
    }

    /// The rule for a body value with this hash, if the value is named.
    #[inline]
    pub(crate) fn rule_for(&self, value_hash: Option<u64>) -> Option<Rule> {
        let h = value_hash?;
        self.entries
            .iter()
            .flatten()
            .find(|e| e.hash == h)
            .map(|e| e.rule)
    }

    /// The rule named `name`, if any.
    pub fn get(&self, name: &str) -> Option<Rule> {
        self.rule_for(Some(hash(name.bytes())))
    }

    /// Every named code with its rule, in the order they were named.
    pub fn iter(&self) -> impl Iterator<Item = (&str, Rule)> {
        self.entries.iter().flatten().map(|e| (e.name(), e.rule))
    }

    /// Whether no code is named.
    pub fn is_empty(&self) -> bool {
        self.entries.iter().all(Option::is_none)
    }
}
