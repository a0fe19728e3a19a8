//! `oneshot.glob_match` and `oneshot.regex_find`, with bounded caches of compiled patterns.
//!
//! Hooks run before every transition and usually test the same few patterns, so compiling
//! once per Lua state matters; the caches are small and evict the least recently used pattern,
//! so a policy building patterns from data cannot grow them without bound.

use super::{arg, located};
use globset::{GlobBuilder, GlobMatcher};
use mlua::{Lua, MultiValue, Table, Value};
use regex::bytes::{Regex, RegexBuilder};
use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

/// Compiled patterns kept per kind.
const CACHE_ENTRIES: usize = 64;

/// Longest pattern accepted (in bytes), before compiling.
const MAX_PATTERN: usize = 4096;

/// Compiled-program size limit for one regex; `regex`'s default is 10 MiB, far more than a
/// policy needs and a lot of memory outside the Lua state's cap.
const REGEX_SIZE_LIMIT: usize = 1024 * 1024;

/// A small least-recently-used cache.
struct Lru<T> {
    entries: HashMap<String, (T, u64)>,
    clock: u64,
}

impl<T: Clone> Lru<T> {
    fn new() -> Self {
        Lru {
            entries: HashMap::new(),
            clock: 0,
        }
    }

    fn get_or(
        &mut self,
        key: &str,
        build: impl FnOnce() -> Result<T, String>,
    ) -> Result<T, String> {
        self.clock += 1;
        if let Some((value, used)) = self.entries.get_mut(key) {
            *used = self.clock;
            return Ok(value.clone());
        }
        let value = build()?;
        if self.entries.len() >= CACHE_ENTRIES
            && let Some(oldest) = self
                .entries
                .iter()
                .min_by_key(|(_, (_, used))| *used)
                .map(|(k, _)| k.clone())
        {
            self.entries.remove(&oldest);
        }
        self.entries
            .insert(key.to_string(), (value.clone(), self.clock));
        Ok(value)
    }
}

/// Adds `glob_match` and `regex_find` to the `oneshot` table.
pub(super) fn install(lua: &Lua, oneshot: &Table) -> mlua::Result<()> {
    let globs = Rc::new(RefCell::new(Lru::<GlobMatcher>::new()));
    let glob_match = lua.create_function(move |lua, (pattern, path): (Value, Value)| {
        let pattern = arg(lua, "glob_match", "the pattern", &pattern)?.to_string_lossy();
        let path = arg(lua, "glob_match", "the path", &path)?;
        let matcher = globs
            .borrow_mut()
            .get_or(&pattern, || compile_glob(&pattern))
            .map_err(|m| located(lua, m))?;
        Ok(matcher.is_match(&*path.to_string_lossy()))
    })?;
    oneshot.raw_set("glob_match", glob_match)?;

    let regexes = Rc::new(RefCell::new(Lru::<Regex>::new()));
    let regex_find = lua.create_function(move |lua, (pattern, text): (Value, Value)| {
        let pattern = arg(lua, "regex_find", "the pattern", &pattern)?.to_string_lossy();
        let text = arg(lua, "regex_find", "the text", &text)?;
        let re = regexes
            .borrow_mut()
            .get_or(&pattern, || compile_regex(&pattern))
            .map_err(|m| located(lua, m))?;
        let bytes = text.as_bytes();
        let Some(caps) = re.captures(&bytes) else {
            return Ok(MultiValue::from_vec(vec![Value::Nil]));
        };
        let whole = caps.get(0).expect("group 0 always matches");
        // Lua's conventions, like `string.find`: 1-based start, inclusive end.
        let mut out = vec![
            Value::String(lua.create_string(whole.as_bytes())?),
            Value::Integer(whole.start() as i64 + 1),
            Value::Integer(whole.end() as i64),
        ];
        for group in caps.iter().skip(1) {
            out.push(match group {
                Some(m) => Value::String(lua.create_string(m.as_bytes())?),
                None => Value::Nil,
            });
        }
        Ok(MultiValue::from_vec(out))
    })?;
    oneshot.raw_set("regex_find", regex_find)
}

/// Globs as in the ignore lists: `*` stays within one path segment, `**` crosses them.
fn compile_glob(pattern: &str) -> Result<GlobMatcher, String> {
    if pattern.len() > MAX_PATTERN {
        return Err(format!(
            "oneshot.glob_match: the pattern is {} bytes; the limit is {MAX_PATTERN}",
            pattern.len()
        ));
    }
    GlobBuilder::new(pattern)
        .literal_separator(true)
        .build()
        .map(|g| g.compile_matcher())
        .map_err(|e| format!("oneshot.glob_match: invalid glob {pattern:?}: {e}"))
}

fn compile_regex(pattern: &str) -> Result<Regex, String> {
    if pattern.len() > MAX_PATTERN {
        return Err(format!(
            "oneshot.regex_find: the pattern is {} bytes; the limit is {MAX_PATTERN}",
            pattern.len()
        ));
    }
    RegexBuilder::new(pattern)
        .size_limit(REGEX_SIZE_LIMIT)
        .dfa_size_limit(REGEX_SIZE_LIMIT)
        .build()
        .map_err(|e| format!("oneshot.regex_find: invalid regex {pattern:?}: {e}"))
}
