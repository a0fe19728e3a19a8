//! `require` for policies: sibling modules from the policy's own directory and a configured
//! search path, loaded into the same sandbox.
//!
//! Why so narrow: a policy decides whether an agent's work is accepted, so what it can load must
//! be exactly the files a reviewer (and the reload watcher) can see. Module names are plain
//! dotted names (`lib.util` → `lib/util.lua`), never paths; a file that resolves outside its
//! directory (a symlink pointing elsewhere) is refused. New modules load only while the policy
//! file's top-level code runs, so a hook call never touches the disk and [`Modules::sources`]
//! is complete once the load finishes; a hook may still `require` a module that is already
//! loaded (it gets the cached value).

use super::helpers::located;
use super::lua_ctx::type_name;
use mlua::chunk::ChunkMode;
use mlua::{Lua, Table, Value};
use std::cell::RefCell;
use std::path::{Path, PathBuf};
use std::rc::Rc;

/// Registry key of the table caching each loaded module's value by name.
const CACHE: &str = "oneshot.modules";

/// Module files larger than this are refused: a policy module is a page of Lua, not data.
const MAX_MODULE_BYTES: u64 = 1024 * 1024;

/// A directory modules may come from.
struct Root {
    /// As configured (made absolute): what `sources()` reports, so the watcher sees the path
    /// the user wrote.
    dir: PathBuf,
    /// Symlinks resolved: what a module's real path must stay inside.
    real: PathBuf,
}

/// The module loader of one Lua state.
pub(crate) struct Modules {
    roots: Vec<Root>,
    state: RefCell<State>,
}

#[derive(Default)]
struct State {
    /// Whether new modules may be loaded (only during top-level code).
    open: bool,
    /// Modules whose top-level code is running, outermost first: a cycle is a name in here.
    loading: Vec<String>,
    /// Absolute paths of the modules loaded, in load order.
    sources: Vec<PathBuf>,
    /// Digest of every module's path and text, in load order: part of the policy's hash, so
    /// a module-only edit is a different policy in the decision log.
    digest: sha2::Sha256,
}

impl Modules {
    /// A loader searching `policy_dir` (if any) first, then `extra` in order.
    pub(crate) fn new(policy_dir: Option<&Path>, extra: &[PathBuf]) -> Modules {
        let roots = policy_dir
            .into_iter()
            .chain(extra.iter().map(PathBuf::as_path))
            .filter_map(|dir| {
                let dir = std::path::absolute(dir).ok()?;
                let real = dir.canonicalize().ok()?;
                Some(Root { dir, real })
            })
            .collect();
        Modules {
            roots,
            state: RefCell::new(State {
                open: true,
                ..State::default()
            }),
        }
    }

    /// Allows or stops loading new modules (the host opens it while top-level code runs).
    pub(crate) fn set_open(&self, open: bool) {
        self.state.borrow_mut().open = open;
    }

    /// Absolute paths of every module loaded so far.
    pub(crate) fn sources(&self) -> Vec<PathBuf> {
        self.state.borrow().sources.clone()
    }

    /// The digest of the loaded modules (see `State::digest`), `None` when there are none.
    pub(crate) fn digest(&self) -> Option<Vec<u8>> {
        use sha2::Digest;
        let state = self.state.borrow();
        (!state.sources.is_empty()).then(|| state.digest.clone().finalize().to_vec())
    }

    fn require(&self, lua: &Lua, name: Value) -> mlua::Result<Value> {
        let name = match name {
            Value::String(s) => s.to_string_lossy(),
            other => {
                return Err(located(
                    lua,
                    format!(
                        "require expects a module name string, not {}",
                        type_name(&other)
                    ),
                ));
            }
        };
        validate_name(&name).map_err(|m| located(lua, m))?;
        let cache: Table = lua.named_registry_value(CACHE)?;
        let cached: Value = cache.raw_get(name.as_str())?;
        if !cached.is_nil() {
            return Ok(cached);
        }
        {
            let state = self.state.borrow();
            if state.loading.contains(&name) {
                let chain: Vec<&str> = state.loading.iter().map(String::as_str).collect();
                return Err(located(
                    lua,
                    format!(
                        "require({name:?}): cyclic require: {} -> {name}",
                        chain.join(" -> ")
                    ),
                ));
            }
            if !state.open {
                return Err(located(
                    lua,
                    format!(
                        "require({name:?}): modules load only while the policy file loads; \
                         call require at the top of the file, not inside a hook"
                    ),
                ));
            }
        }
        let (path, chunk_name) = self.resolve(&name).map_err(|m| located(lua, m))?;
        let source = read(&path).map_err(|m| located(lua, format!("require({name:?}): {m}")))?;
        {
            use sha2::Digest;
            let mut state = self.state.borrow_mut();
            state.digest.update(path.as_os_str().as_encoded_bytes());
            state.digest.update([0]);
            state.digest.update(source.as_bytes());
        }
        // Text mode for the same reason as the policy itself: bytecode is not verified.
        let func = lua
            .load(source)
            .set_name(format!("@{chunk_name}"))
            .set_mode(ChunkMode::Text)
            .into_function()
            .map_err(|e| match e {
                // Luau's message already starts with `common.lua:7:`.
                mlua::Error::SyntaxError { message, .. } => mlua::Error::runtime(message),
                other => other,
            })?;
        self.state.borrow_mut().loading.push(name.clone());
        let result = func.call::<Value>(name.as_str());
        self.state.borrow_mut().loading.pop();
        let value = match result? {
            // Like Lua's `require`: a module that returns nothing is cached as `true`.
            Value::Nil => Value::Boolean(true),
            value => value,
        };
        cache.raw_set(name.as_str(), &value)?;
        let mut state = self.state.borrow_mut();
        if !state.sources.contains(&path) {
            state.sources.push(path);
        }
        Ok(value)
    }

    /// Finds `name` as `a/b.lua` or `a/b/init.lua` under the first root that has it. Returns
    /// the path and the chunk name errors will show.
    fn resolve(&self, name: &str) -> Result<(PathBuf, String), String> {
        let rel = name.replace('.', "/");
        for root in &self.roots {
            for candidate in [format!("{rel}.lua"), format!("{rel}/init.lua")] {
                let path = root.dir.join(&candidate);
                let Ok(real) = path.canonicalize() else {
                    continue;
                };
                if !real.starts_with(&root.real) {
                    return Err(format!(
                        "require({name:?}): {} resolves outside {} (a symlink?); modules must \
                         live inside the policy's directory or the module search path",
                        path.display(),
                        root.dir.display()
                    ));
                }
                if real.is_file() {
                    return Ok((path, candidate));
                }
            }
        }
        let dirs: Vec<String> = self
            .roots
            .iter()
            .map(|r| r.dir.display().to_string())
            .collect();
        let looked = if dirs.is_empty() {
            "there is no module directory (a policy loaded from a string has none)".to_string()
        } else {
            format!(
                "looked for {rel}.lua and {rel}/init.lua in {}",
                dirs.join(", ")
            )
        };
        Err(format!("require({name:?}): module not found; {looked}"))
    }
}

/// Names are dotted words: no slashes, no `..`, nothing absolute.
fn validate_name(name: &str) -> Result<(), String> {
    let allowed = |b: u8| b.is_ascii_alphanumeric() || b == b'_' || b == b'-' || b == b'.';
    if name.is_empty() || name.len() > 255 || !name.bytes().all(allowed) {
        return Err(format!(
            "require({name:?}): invalid module name; use letters, digits, `_`, `-` and `.` \
             (`.` separates directories: require(\"lib.util\") loads lib/util.lua), not a path"
        ));
    }
    if name.split('.').any(str::is_empty) {
        return Err(format!(
            "require({name:?}): invalid module name; `..` and leading or trailing dots are \
             not allowed (modules cannot reach outside their directory)"
        ));
    }
    Ok(())
}

fn read(path: &Path) -> Result<String, String> {
    let size = std::fs::metadata(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?
        .len();
    if size > MAX_MODULE_BYTES {
        return Err(format!(
            "{} is {size} bytes; modules are limited to {MAX_MODULE_BYTES}",
            path.display()
        ));
    }
    std::fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))
}

/// Installs `require` (before the globals are frozen).
pub(crate) fn install(lua: &Lua, modules: Rc<Modules>) -> mlua::Result<()> {
    lua.set_named_registry_value(CACHE, lua.create_table()?)?;
    let require = lua.create_function(move |lua, name: Value| modules.require(lua, name))?;
    lua.globals().raw_set("require", require)
}
