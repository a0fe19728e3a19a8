//! Whether a policy file (or module) parses, without running any of it: what `oneshot policy
//! trust` asks before it records a file's content as approved.

use super::error::PolicyError;
use super::host::syntax_error;
use mlua::chunk::ChunkMode;

/// Compiles `source` as Luau text and reports the first syntax error as
/// [`PolicyError::Load`] with `name:line` (`name` is how the file is named in the message; pass
/// the path as the user gave it). Nothing runs: a module, which returns no policy table, passes
/// as long as it parses.
pub fn check_syntax(name: &str, source: &[u8]) -> Result<(), PolicyError> {
    let text = std::str::from_utf8(source).map_err(|e| PolicyError::Load {
        file: name.to_string(),
        line: None,
        message: format!("it is not UTF-8 text ({e})"),
    })?;
    // A bare state is enough to compile: no library, no sandbox, nothing is called. Text mode
    // as everywhere: Luau bytecode is not verified.
    let lua = mlua::Lua::new();
    lua.load(text)
        .set_name(format!("@{name}"))
        .set_mode(ChunkMode::Text)
        .into_function()
        .map(drop)
        .map_err(|e| syntax_error(name, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_module_parses_and_a_syntax_error_has_its_line() {
        assert!(
            check_syntax(
                "m.lua",
                b"local M = {}\nfunction M.f() return 1 end\nreturn M\n"
            )
            .is_ok()
        );
        match check_syntax(
            "dir/p.lua",
            b"return {\n  limits = { max_iterations = },\n}\n",
        ) {
            Err(PolicyError::Load { file, line, .. }) => {
                assert_eq!((file.as_str(), line), ("dir/p.lua", Some(2)));
            }
            other => panic!("{other:?}"),
        }
        let e = check_syntax("b.lua", b"return \xff").unwrap_err();
        assert!(e.to_string().contains("b.lua: it is not UTF-8 text"), "{e}");
    }
}
