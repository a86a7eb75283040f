//! The API shapes steadfast speaks: OpenAI-compatible Chat Completions and Anthropic
//! Messages. One enum for every face (the clients, the fake upstream, the simulator,
//! the tests); what each face does with a provider (headers, bodies) stays in it.

use core::fmt;
use core::str::FromStr;

/// Which API an endpoint speaks.
///
/// With the `serde` feature it is written `"openai"` or `"anthropic"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
#[cfg_attr(
    feature = "serde",
    derive(serde::Serialize, serde::Deserialize),
    serde(rename_all = "lowercase")
)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub enum Provider {
    /// OpenAI-compatible: `POST /v1/chat/completions`, `Authorization: Bearer KEY`.
    #[default]
    OpenAi,
    /// Anthropic: `POST /v1/messages`, `x-api-key: KEY`, `anthropic-version`.
    Anthropic,
}

impl Provider {
    /// Both providers, OpenAI first.
    pub const ALL: [Provider; 2] = [Provider::OpenAi, Provider::Anthropic];

    /// The name used in configuration and on command lines: `openai` or `anthropic`.
    pub fn name(self) -> &'static str {
        match self {
            Provider::OpenAi => "openai",
            Provider::Anthropic => "anthropic",
        }
    }

    /// The provider named `name` (ASCII case-insensitive, surrounding spaces ignored).
    pub fn from_name(name: &str) -> Option<Provider> {
        let name = name.trim();
        Provider::ALL
            .into_iter()
            .find(|p| p.name().eq_ignore_ascii_case(name))
    }

    /// The request path below the API root, starting with `/v1`.
    pub fn path(self) -> &'static str {
        match self {
            Provider::OpenAi => "/v1/chat/completions",
            Provider::Anthropic => "/v1/messages",
        }
    }

    /// The provider whose request path `path` ends with.
    pub fn from_path(path: &str) -> Option<Provider> {
        Provider::ALL.into_iter().find(|p| path.ends_with(p.path()))
    }
}

impl fmt::Display for Provider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A provider name that is neither `openai` nor `anthropic`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UnknownProvider;

impl fmt::Display for UnknownProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("unknown provider (expected `openai` or `anthropic`)")
    }
}

impl core::error::Error for UnknownProvider {}

impl FromStr for Provider {
    type Err = UnknownProvider;

    /// `openai` or `anthropic`, ASCII case-insensitive.
    fn from_str(s: &str) -> Result<Provider, UnknownProvider> {
        Provider::from_name(s).ok_or(UnknownProvider)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_paths_round_trip() {
        for p in Provider::ALL {
            assert_eq!(Provider::from_name(p.name()), Some(p));
            assert_eq!(p.name().parse::<Provider>(), Ok(p));
            assert_eq!(Provider::from_path(p.path()), Some(p));
        }
        assert_eq!(
            Provider::from_name(" Anthropic "),
            Some(Provider::Anthropic)
        );
        assert_eq!("azure".parse::<Provider>(), Err(UnknownProvider));
        assert_eq!(
            Provider::from_path("/openai/v1/chat/completions"),
            Some(Provider::OpenAi)
        );
        assert_eq!(Provider::from_path("/v1/models"), None);
    }

    #[cfg(feature = "serde")]
    #[test]
    fn serde_names() {
        assert_eq!(
            serde_json::to_string(&Provider::Anthropic).unwrap(),
            "\"anthropic\""
        );
        assert_eq!(
            serde_json::from_str::<Provider>("\"openai\"").unwrap(),
            Provider::OpenAi
        );
        assert!(serde_json::from_str::<Provider>("\"OpenAi\"").is_err());
    }
}
