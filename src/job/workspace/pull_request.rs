//! What opens a pull request for a pushed job branch, without calling any host's API: the
//! compare/merge-request URL of GitHub or GitLab, read from the remote's URL, or else the
//! `git request-pull` command any host (or a mailing list) takes.

/// The URL (GitHub, GitLab) or command that asks to merge `branch` into `base` on `remote`
/// (whose URL is `url`).
pub fn pull_request(remote: &str, url: &str, base: &str, branch: &str) -> String {
    match web_repo(url) {
        Some((host, path)) if host == "github.com" => {
            format!("https://github.com/{path}/compare/{base}...{branch}?expand=1")
        }
        Some((host, path)) if host.starts_with("gitlab.") => format!(
            "https://{host}/{path}/-/merge_requests/new?merge_request[source_branch]={branch}&merge_request[target_branch]={base}"
        ),
        _ => format!("git request-pull {remote}/{base} {url} {branch}"),
    }
}

/// The host and `owner/repo` path of a remote URL in the forms hosts hand out:
/// `git@host:owner/repo.git`, `ssh://git@host/owner/repo`, `https://host/owner/repo.git`.
fn web_repo(url: &str) -> Option<(String, String)> {
    let rest = if let Some(r) = url
        .strip_prefix("https://")
        .or_else(|| url.strip_prefix("http://"))
        .or_else(|| url.strip_prefix("ssh://"))
        .or_else(|| url.strip_prefix("git://"))
    {
        r.to_owned()
    } else {
        // scp-like: user@host:path (a local path has no colon before its first slash).
        let (head, path) = url.split_once(':')?;
        if head.contains('/') || path.starts_with("//") {
            return None;
        }
        format!("{head}/{path}")
    };
    let (authority, path) = rest.split_once('/')?;
    let host = authority
        .rsplit('@')
        .next()?
        .split(':')
        .next()?
        .to_lowercase();
    let path = path.trim_end_matches('/').trim_end_matches(".git");
    if host.is_empty() || path.split('/').filter(|p| !p.is_empty()).count() < 2 {
        return None;
    }
    Some((host, path.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::pull_request;

    #[test]
    fn github_and_gitlab_get_their_urls_and_anything_else_a_request_pull() {
        let b = "oneshot/job-1a2b3c4d";
        for url in [
            "git@github.com:ana/tool.git",
            "https://github.com/ana/tool.git",
            "ssh://git@github.com/ana/tool",
        ] {
            assert_eq!(
                pull_request("origin", url, "main", b),
                format!("https://github.com/ana/tool/compare/main...{b}?expand=1"),
                "{url}"
            );
        }
        assert_eq!(
            pull_request("origin", "git@gitlab.com:grp/sub/tool.git", "dev", b),
            format!(
                "https://gitlab.com/grp/sub/tool/-/merge_requests/new?merge_request[source_branch]={b}&merge_request[target_branch]=dev"
            )
        );
        assert_eq!(
            pull_request("origin", "/srv/git/tool.git", "main", b),
            format!("git request-pull origin/main /srv/git/tool.git {b}")
        );
        assert_eq!(
            pull_request("up", "https://git.example.org/tool.git", "main", b),
            format!("git request-pull up/main https://git.example.org/tool.git {b}")
        );
    }
}
