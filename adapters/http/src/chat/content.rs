//! Content parts ⇄ content blocks: text, and images (`image_url` data URLs ⇄ base64
//! sources, http(s) URLs ⇄ URL sources).

use serde_json::{Value, json};

use super::error::TranslateError;
use super::json::{Obj, at, get, object, only, req_str};

/// The image types Anthropic accepts.
const IMAGE_TYPES: [&str; 4] = ["image/jpeg", "image/png", "image/gif", "image/webp"];

/// An Anthropic text block.
pub(crate) fn text_block(text: &str) -> Value {
    json!({"type": "text", "text": text})
}

/// An OpenAI text part.
pub(crate) fn text_part(text: &str) -> Value {
    json!({"type": "text", "text": text})
}

/// A user content part (`text` or `image_url`) as an Anthropic block.
pub(crate) fn part_to_block(part: &Value, base: &str) -> Result<Value, TranslateError> {
    let p = object(part, base)?;
    match req_str(p, base, "type")? {
        "text" => {
            only(p, base, &["type", "text"])?;
            Ok(text_block(req_str(p, base, "text")?))
        }
        "image_url" => image_block(p, base),
        _ => Err(TranslateError::untranslatable(
            at(base, "type"),
            "Anthropic content takes text and image parts only",
        )),
    }
}

fn image_block(p: &Obj, base: &str) -> Result<Value, TranslateError> {
    only(p, base, &["type", "image_url"])?;
    let field = at(base, "image_url");
    let image = get(p, "image_url").ok_or_else(|| TranslateError::missing(&field))?;
    let image = object(image, &field)?;
    // `detail` picks a resolution (and a price) on OpenAI; Anthropic has one, so the
    // hint has no equivalent to carry and nothing in the answer depends on it.
    only(image, &field, &["url", "detail"])?;
    let url = req_str(image, &field, "url")?;
    let url_field = at(&field, "url");
    if url.starts_with("https://") || url.starts_with("http://") {
        return Ok(json!({"type": "image", "source": {"type": "url", "url": url}}));
    }
    let Some(rest) = url.strip_prefix("data:") else {
        return Err(TranslateError::invalid(
            url_field,
            "a data: URL or an http(s) URL",
        ));
    };
    let (head, data) = rest
        .split_once(',')
        .ok_or_else(|| TranslateError::invalid(&url_field, "a data: URL with a comma"))?;
    let Some(media) = head.strip_suffix(";base64") else {
        return Err(TranslateError::untranslatable(
            url_field,
            "Anthropic takes base64 data URLs only",
        ));
    };
    if !IMAGE_TYPES.contains(&media) {
        return Err(TranslateError::untranslatable(
            url_field,
            "Anthropic takes JPEG, PNG, GIF and WebP images only",
        ));
    }
    Ok(json!({
        "type": "image",
        "source": {"type": "base64", "media_type": media, "data": data}
    }))
}

/// An Anthropic user content block (`text` or `image`) as an OpenAI content part.
pub(crate) fn block_to_part(block: &Obj, base: &str) -> Result<Value, TranslateError> {
    match req_str(block, base, "type")? {
        "text" => {
            // Prompt caching is automatic on OpenAI: `cache_control` asks for nothing
            // the answer depends on.
            only(block, base, &["type", "text", "cache_control"])?;
            Ok(text_part(req_str(block, base, "text")?))
        }
        "image" => image_part(block, base),
        _ => Err(TranslateError::untranslatable(
            at(base, "type"),
            "OpenAI user content takes text and image parts only",
        )),
    }
}

fn image_part(block: &Obj, base: &str) -> Result<Value, TranslateError> {
    only(block, base, &["type", "source", "cache_control"])?;
    let field = at(base, "source");
    let source = get(block, "source").ok_or_else(|| TranslateError::missing(&field))?;
    let source = object(source, &field)?;
    let url = match req_str(source, &field, "type")? {
        "base64" => {
            only(source, &field, &["type", "media_type", "data"])?;
            let media = req_str(source, &field, "media_type")?;
            let data = req_str(source, &field, "data")?;
            format!("data:{media};base64,{data}")
        }
        "url" => {
            only(source, &field, &["type", "url"])?;
            req_str(source, &field, "url")?.to_owned()
        }
        _ => {
            return Err(TranslateError::untranslatable(
                at(&field, "type"),
                "OpenAI images are URLs or base64 data URLs",
            ));
        }
    };
    Ok(json!({"type": "image_url", "image_url": {"url": url}}))
}

/// The texts of text-only content: a string, or an array of text parts (or blocks)
/// whose fields are all in `known`.
pub(crate) fn texts(
    content: &Value,
    base: &str,
    known: &[&str],
    why: &'static str,
) -> Result<Vec<String>, TranslateError> {
    if let Some(s) = content.as_str() {
        return Ok(vec![s.to_owned()]);
    }
    let parts = content
        .as_array()
        .ok_or_else(|| TranslateError::invalid(base, "a string or an array of parts"))?;
    parts
        .iter()
        .enumerate()
        .map(|(i, part)| {
            let at_i = super::json::item(base, i);
            let p = object(part, &at_i)?;
            if req_str(p, &at_i, "type")? != "text" {
                return Err(TranslateError::untranslatable(at(&at_i, "type"), why));
            }
            only(p, &at_i, known)?;
            Ok(req_str(p, &at_i, "text")?.to_owned())
        })
        .collect()
}
