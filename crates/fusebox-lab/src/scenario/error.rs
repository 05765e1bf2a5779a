//! A scenario that could not be loaded: file, line, key and what is wrong.

use std::fmt;
use std::ops::Range;
use toml::Spanned;

/// A scenario that could not be loaded: file, line, key and what is wrong.
#[derive(Debug, Clone, PartialEq)]
pub struct ScenarioError {
    /// The file (as given on the command line).
    pub file: String,
    /// 1-based line, when known.
    pub line: Option<usize>,
    /// The offending key (dotted path), when known.
    pub key: Option<String>,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file)?;
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
        }
        write!(f, ": ")?;
        if let Some(key) = &self.key {
            write!(f, "key `{key}`: ")?;
        }
        write!(f, "{}", self.message)
    }
}

impl std::error::Error for ScenarioError {}

/// File name and text, to turn byte spans into lines in errors.
pub(crate) struct Ctx<'a> {
    pub(crate) file: &'a str,
    pub(crate) text: &'a str,
}

impl Ctx<'_> {
    fn line_of(&self, offset: usize) -> usize {
        let offset = offset.min(self.text.len());
        self.text[..offset].bytes().filter(|&b| b == b'\n').count() + 1
    }

    /// An error about the value at `span`, under `key`.
    pub(crate) fn err(
        &self,
        span: Range<usize>,
        key: &str,
        message: impl Into<String>,
    ) -> ScenarioError {
        ScenarioError {
            file: self.file.to_string(),
            line: Some(self.line_of(span.start)),
            key: Some(key.to_string()),
            message: message.into(),
        }
    }

    pub(crate) fn toml_error(&self, e: &toml::de::Error) -> ScenarioError {
        let line = e.span().map(|s| self.line_of(s.start));
        // The key: named in serde's message ("unknown field `x`", "missing field `x`"),
        // or else the text before `=` on the error's line.
        let message = e.message().trim().to_string();
        let key = backticked(&message).or_else(|| {
            let l = line?;
            let src = self.text.lines().nth(l - 1)?;
            let (k, _) = src.split_once('=')?;
            let k = k.trim();
            (!k.is_empty() && !k.starts_with('[')).then(|| k.to_string())
        });
        ScenarioError {
            file: self.file.to_string(),
            line,
            key,
            message,
        }
    }
}

fn backticked(message: &str) -> Option<String> {
    if !(message.contains("unknown field") || message.contains("missing field")) {
        return None;
    }
    let start = message.find('`')? + 1;
    let len = message[start..].find('`')?;
    Some(message[start..start + len].to_string())
}

/// Checks `lo <= v <= hi` for an integer key.
pub(crate) fn int_in(
    ctx: &Ctx<'_>,
    v: &Spanned<i64>,
    key: &str,
    lo: i64,
    hi: i64,
) -> Result<i64, ScenarioError> {
    let x = *v.get_ref();
    if x < lo || x > hi {
        return Err(ctx.err(v.span(), key, format!("{x} is out of range ({lo}..={hi})")));
    }
    Ok(x)
}
