//! Config files: TOML and YAML into a [`FuseboxConfig`], with errors that
//! name the key and its line, and bounds on what a file may ask of the
//! parser.

use super::config::{BreakerEntry, FuseboxConfig};
use super::error::InvalidConfig;
use crate::BreakerConfig;
use serde::de::value::MapAccessDeserializer;
use serde::de::{self, DeserializeSeed, Deserializer, IntoDeserializer, MapAccess, Visitor};
use serde::Deserialize;
use std::fmt;

/// The largest config file read (1 MiB).
pub const MAX_SOURCE_BYTES: usize = 1 << 20;
/// The deepest nesting of tables, arrays and flow collections accepted.
pub const MAX_DEPTH: usize = 32;

impl FuseboxConfig {
    /// Parses and validates a TOML config (feature `config`).
    ///
    /// ```toml
    /// [defaults.breaker]
    /// open_for = "30s"
    ///
    /// [breakers.payments]
    /// failure_rate = 0.5
    /// time_window = "60s"
    /// tags = { service = "payments" }
    /// ```
    ///
    /// # Errors
    ///
    /// Syntax errors, unknown keys, values of the wrong type or out of range
    /// (negative durations, rates outside `(0, 1]`), keys that contradict
    /// each other, a file over [`MAX_SOURCE_BYTES`] or nested deeper than
    /// [`MAX_DEPTH`]: each naming the key (`breakers.payments.open_for`)
    /// and its line.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::registry::FuseboxConfig;
    ///
    /// let config = FuseboxConfig::from_toml(r#"
    /// [breakers.payments]
    /// consecutive_failures = 3
    /// open_for = "10s"
    /// "#)?;
    /// assert_eq!(config.breakers["payments"].settings.consecutive_failures, Some(3));
    ///
    /// let err = FuseboxConfig::from_toml(r#"
    /// [breakers.payments]
    /// open_for = "-10s"
    /// "#).unwrap_err();
    /// assert_eq!(err.key(), "breakers.payments.open_for");
    /// assert_eq!(err.line(), Some(3));
    /// # Ok::<(), fusebox::registry::InvalidConfig>(())
    /// ```
    pub fn from_toml(source: &str) -> Result<FuseboxConfig, InvalidConfig> {
        check_bounds(source)?;
        let de = toml::Deserializer::parse(source).map_err(|e| {
            let line = e.span().map(|s| line_of(source, s.start));
            located(source, String::new(), line, e.message())
        })?;
        let config: FuseboxConfig = serde_path_to_error::deserialize(de).map_err(|e| {
            let key = path_key(e.path());
            let inner = e.into_inner();
            let line = inner.span().map(|s| line_of(source, s.start));
            located(source, key, line, inner.message())
        })?;
        config.validate().map_err(|e| locate(source, e))?;
        Ok(config)
    }

    /// Parses and validates a YAML config (feature `config`); same keys,
    /// bounds and errors as [`FuseboxConfig::from_toml`].
    ///
    /// # Errors
    ///
    /// As [`FuseboxConfig::from_toml`].
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::registry::FuseboxConfig;
    ///
    /// let config = FuseboxConfig::from_yaml("
    /// breakers:
    ///   payments:
    ///     failure_rate: 0.25
    ///     count_window: 20
    /// ")?;
    /// assert_eq!(config.breakers["payments"].settings.failure_rate, Some(0.25));
    ///
    /// let err = FuseboxConfig::from_yaml("
    /// breakers:
    ///   payments:
    ///     failure_rate: 2
    /// ").unwrap_err();
    /// assert_eq!(err.key(), "breakers.payments.failure_rate");
    /// assert_eq!(err.line(), Some(4));
    /// # Ok::<(), fusebox::registry::InvalidConfig>(())
    /// ```
    pub fn from_yaml(source: &str) -> Result<FuseboxConfig, InvalidConfig> {
        check_bounds(source)?;
        let de = serde_yaml_ng::Deserializer::from_str(source);
        let config: FuseboxConfig = serde_path_to_error::deserialize(de).map_err(|e| {
            let key = path_key(e.path());
            let inner = e.into_inner();
            let line = inner.location().map(|l| l.line());
            let mut message = inner.to_string();
            // serde_yaml_ng appends " at line L column C"; the line is reported separately.
            if let Some(i) = message.find(" at line ") {
                message.truncate(i);
            }
            // ... and may start with its own path ("breakers.db: "); the key
            // is reported separately too.
            if let Some((head, rest)) = message.split_once(": ") {
                if !head.is_empty() && !head.contains([' ', '`', '"']) {
                    message = rest.to_owned();
                }
            }
            located(source, key, line, &message)
        })?;
        config.validate().map_err(|e| locate(source, e))?;
        Ok(config)
    }
}

/// Refuses a source too large or nested too deep before any parser sees it
/// (a YAML parser's time can grow with the square of the nesting).
fn check_bounds(source: &str) -> Result<(), InvalidConfig> {
    if source.len() > MAX_SOURCE_BYTES {
        return Err(InvalidConfig::new(
            "",
            format!(
                "the file is {} bytes; at most {MAX_SOURCE_BYTES} are read",
                source.len()
            ),
        ));
    }
    let mut depth = 0usize;
    for (n, line) in source.lines().enumerate() {
        // A quote opens a string only where a value can start (both
        // formats): `x: a"b` is a plain scalar, not a string that would hide
        // the brackets after it. A string ends at its closing quote or, to
        // stay conservative, at the end of the line: the brackets of a
        // multi-line string's later lines are counted.
        let mut quote: Option<char> = None;
        let mut escaped = false;
        let mut prev: Option<char> = None;
        for c in line.chars() {
            match quote {
                Some(q) => {
                    if escaped {
                        escaped = false;
                    } else if c == '\\' && q == '"' {
                        escaped = true;
                    } else if c == q {
                        quote = None;
                    }
                }
                None => match c {
                    '"' | '\''
                        if prev.is_none_or(|p| p.is_whitespace() || "=:,[{-?".contains(p)) =>
                    {
                        quote = Some(c)
                    }
                    '#' if prev.is_none_or(char::is_whitespace) => break,
                    '[' | '{' => {
                        depth += 1;
                        if depth > MAX_DEPTH {
                            return Err(InvalidConfig::new(
                                "",
                                format!("nested deeper than {MAX_DEPTH} levels"),
                            )
                            .at(Some(n + 1)));
                        }
                    }
                    ']' | '}' => depth = depth.saturating_sub(1),
                    _ => {}
                },
            }
            prev = Some(c);
        }
    }
    Ok(())
}

fn path_key(path: &serde_path_to_error::Path) -> String {
    let s = path.to_string();
    if s == "." {
        String::new()
    } else {
        s
    }
}

/// 1-based line of byte offset `at` in `source`.
fn line_of(source: &str, at: usize) -> usize {
    let at = at.min(source.len());
    source.as_bytes()[..at]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

/// A parse error: where the parser gave no key (a duplicate key, a number
/// too large), the key is read off the line it points at.
fn located(source: &str, key: String, line: Option<usize>, message: &str) -> InvalidConfig {
    let key = match (key.is_empty(), line) {
        (true, Some(line)) => key_at_line(source, line).unwrap_or_default(),
        _ => key,
    };
    InvalidConfig::new(key, message.trim()).at(line)
}

/// An error found after parsing: its line from its key.
fn locate(source: &str, e: InvalidConfig) -> InvalidConfig {
    let line = find_key_line(source, &e.key);
    e.at(line)
}

/// The full key written on `line` (1-based) of a TOML or YAML source: the
/// tables it sits in, then the key itself.
fn key_at_line(source: &str, line: usize) -> Option<String> {
    let lines: Vec<&str> = source.lines().collect();
    let text = lines.get(line.checked_sub(1)?)?;
    let own = leading_key(text)?;
    // TOML: the nearest table header above.
    let header = lines[..line - 1].iter().rev().find_map(|l| table_header(l));
    // YAML: the keys of the lines above with less indentation.
    let mut parents = Vec::new();
    let mut indent = indentation(text);
    for l in lines[..line - 1].iter().rev() {
        if l.trim().is_empty() || l.trim_start().starts_with('#') {
            continue;
        }
        let i = indentation(l);
        if i < indent && l.trim_end().ends_with(':') {
            parents.push(leading_key(l)?);
            indent = i;
        }
    }
    parents.reverse();
    let mut parts: Vec<String> = header.into_iter().collect();
    parts.extend(parents);
    parts.push(own);
    Some(parts.join("."))
}

fn indentation(line: &str) -> usize {
    line.len() - line.trim_start().len()
}

fn table_header(line: &str) -> Option<String> {
    let t = line.trim();
    let inner = t.strip_prefix('[')?.trim_start_matches('[');
    let inner = inner.split(']').next()?;
    Some(
        inner
            .split('.')
            .map(|s| s.trim().trim_matches('"').trim_matches('\''))
            .collect::<Vec<_>>()
            .join("."),
    )
}

fn leading_key(line: &str) -> Option<String> {
    let t = line.trim_start().trim_start_matches("- ");
    let end = t.find(['=', ':'])?;
    let key = t[..end].trim().trim_matches('"').trim_matches('\'');
    (!key.is_empty() && !key.starts_with('[')).then(|| key.to_owned())
}

/// The line of a dotted key in a TOML or YAML source: each segment is
/// looked for as a key (`seg =`, `seg:`) or in a TOML table header, after
/// the previous segment and inside its table (it stops at the next table
/// header or, in YAML, at the next line indented no deeper than the
/// previous segment). A key absent from its table (a missing companion
/// key) gets the table's line.
fn find_key_line(source: &str, key: &str) -> Option<usize> {
    let lines: Vec<&str> = source.lines().collect();
    let segs: Vec<&str> = key.split('.').collect();
    let mut from = 0usize;
    let mut to = lines.len();
    let mut found = None;
    let mut rest = &segs[..];
    // TOML: the table header naming the longest prefix of the key.
    let header_hit = (1..=segs.len()).rev().find_map(|n| {
        let want = segs[..n].join(".");
        let i = lines
            .iter()
            .position(|l| table_header(l.trim_start()).as_deref() == Some(want.as_str()))?;
        Some((n, i))
    });
    if let Some((n, i)) = header_hit {
        found = Some(i + 1);
        rest = &segs[n..];
        from = i + 1;
        to = (from..lines.len())
            .find(|&j| lines[j].trim_start().starts_with('['))
            .unwrap_or(lines.len());
    }
    for seg in rest {
        let Some(hit) = (from..to).find(|&i| line_has_key(lines[i], seg)) else {
            break;
        };
        found = Some(hit + 1);
        from = hit + 1;
        let indent = indentation(lines[hit]);
        to = (from..to)
            .find(|&i| {
                let l = lines[i].trim_start();
                !(l.is_empty() || l.starts_with('#')) && indentation(lines[i]) <= indent
            })
            .unwrap_or(to);
        if lines[hit].contains('{') {
            // An inline table: its keys are on this very line.
            from = hit;
            to = hit + 1;
        }
    }
    found
}

fn line_has_key(line: &str, seg: &str) -> bool {
    let t = line.trim_start().trim_start_matches("- ");
    if let Some(header) = table_header(t) {
        return header.split('.').any(|h| h == seg);
    }
    // `seg = ...`, `seg: ...`, `"seg" = ...`, or an inline table `{ seg = ... }`.
    let mut rest = t;
    loop {
        let unquoted = rest.trim_start_matches(['{', ',', ' ']);
        let unquoted = unquoted.trim_start_matches(['"', '\'']);
        if let Some(after) = unquoted.strip_prefix(seg) {
            let after = after.trim_start_matches(['"', '\'']).trim_start();
            if after.starts_with('=') || after.starts_with(':') {
                return true;
            }
        }
        match rest.find([',', '{']) {
            Some(i) => rest = &rest[i + 1..],
            None => return false,
        }
    }
}

/// Every key a breaker table takes: the settings' keys, and `tags`.
const ENTRY_KEYS: [&str; BreakerConfig::KEYS.len() + 1] = {
    let mut keys = [""; BreakerConfig::KEYS.len() + 1];
    let mut i = 0;
    while i < BreakerConfig::KEYS.len() {
        keys[i] = BreakerConfig::KEYS[i];
        i += 1;
    }
    keys[i] = "tags";
    keys
};

impl<'de> Deserialize<'de> for BreakerEntry {
    /// The breaker's keys go to [`BreakerConfig`]'s own deserialiser (and
    /// its checks), `tags` to the entry: one table in the file, one settings
    /// type in the code.
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct EntryVisitor;
        impl<'de> Visitor<'de> for EntryVisitor {
            type Value = BreakerEntry;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a table of breaker settings")
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<BreakerEntry, A::Error> {
                let mut tags = None;
                let settings = BreakerConfig::deserialize(MapAccessDeserializer::new(Tagless {
                    map,
                    tags: &mut tags,
                }))?;
                Ok(BreakerEntry {
                    settings,
                    tags: tags.unwrap_or_default(),
                })
            }
        }
        d.deserialize_map(EntryVisitor)
    }
}

/// A breaker table with its `tags` taken out as they pass.
struct Tagless<'a, A> {
    map: A,
    tags: &'a mut Option<crate::observe::Tags>,
}

impl<'de, A: MapAccess<'de>> MapAccess<'de> for Tagless<'_, A> {
    type Error = A::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, A::Error> {
        loop {
            let Some(key) = self.map.next_key_seed(EntryKey)? else {
                return Ok(None);
            };
            if key == "tags" {
                *self.tags = Some(self.map.next_value()?);
                continue;
            }
            return seed.deserialize(key.into_deserializer()).map(Some);
        }
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, A::Error> {
        self.map.next_value_seed(seed)
    }
}

/// A key of a breaker table, refused here (where the key's own position is
/// known) when it is not one.
struct EntryKey;

impl<'de> DeserializeSeed<'de> for EntryKey {
    type Value = String;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<String, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = String;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a breaker setting")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<String, E> {
                if ENTRY_KEYS.contains(&s) {
                    Ok(s.to_owned())
                } else {
                    Err(E::unknown_field(s, &ENTRY_KEYS))
                }
            }
        }
        d.deserialize_identifier(V)
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn entry_keys_are_the_settings_keys_and_tags() {
        let n = BreakerConfig::KEYS.len();
        assert_eq!(ENTRY_KEYS[..n], BreakerConfig::KEYS);
        assert_eq!(ENTRY_KEYS[n], "tags");
    }

    #[test]
    fn key_at_line_reads_toml_and_yaml() {
        let toml = "[breakers.db]\nmin_calls = 3\ncount_window = 99999999999999999999999\n";
        assert_eq!(
            key_at_line(toml, 3).as_deref(),
            Some("breakers.db.count_window")
        );
        let yaml = "breakers:\n  db:\n    min_calls: 3\n";
        assert_eq!(
            key_at_line(yaml, 3).as_deref(),
            Some("breakers.db.min_calls")
        );
    }

    #[test]
    fn a_missing_key_is_looked_for_in_its_own_table_only() {
        let src = "[breakers.a]\nslow_call_rate = 0.5\n\n[breakers.b]\nslow_call_duration = \"1s\"\nslow_call_rate = 0.5\n";
        assert_eq!(find_key_line(src, "breakers.a.slow_call_duration"), Some(1));
        assert_eq!(find_key_line(src, "breakers.b.slow_call_duration"), Some(5));
    }
}
