//! Where the user's `config.toml` is. The project's `oneshot.toml` is found by
//! [`crate::paths`], looking upward from the workdir.

use std::ffi::OsString;
use std::path::PathBuf;

/// The user's config file, with the environment passed in: `$XDG_CONFIG_HOME/oneshot/
/// config.toml` (when absolute), else `~/.config/oneshot/config.toml`; `None` without a home.
/// It need not exist.
pub fn user_file(var: impl Fn(&str) -> Option<OsString>) -> Option<PathBuf> {
    crate::paths::user_dir(&var, "XDG_CONFIG_HOME", ".config")
        .map(|d| d.join("oneshot").join("config.toml"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_user_file_follows_xdg() {
        let xdg = |k: &str| match k {
            "XDG_CONFIG_HOME" => Some(OsString::from("/xdg")),
            "HOME" => Some(OsString::from("/home/u")),
            _ => None,
        };
        assert_eq!(
            user_file(xdg),
            Some(PathBuf::from("/xdg/oneshot/config.toml"))
        );
        let home = |k: &str| (k == "HOME").then(|| OsString::from("/home/u"));
        assert_eq!(
            user_file(home),
            Some(PathBuf::from("/home/u/.config/oneshot/config.toml"))
        );
        assert_eq!(user_file(|_| None), None);
    }
}
