use super::*;

const CODEX: ModelApi = ModelApi {
    provider: Provider::OpenAi,
    via: Via::CodexProvider,
    key_vars: &["OPENAI_API_KEY", "CODEX_API_KEY"],
    default_base: "https://api.openai.com/v1",
};

fn words(list: &[&str]) -> Vec<String> {
    list.iter().map(|w| w.to_string()).collect()
}

/// `argv` of a one-word program with no user arguments, its config in `own_dir`.
fn plain<'a>(argv: &'a [String], own_dir: Option<&'a std::path::Path>) -> AgentWords<'a> {
    AgentWords {
        argv,
        user_args: &[],
        program_len: 1,
        own_dir,
    }
}

fn env<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
    move |k| {
        pairs
            .iter()
            .find(|(n, _)| *n == k)
            .map(|(_, v)| v.to_string())
    }
}

#[test]
fn codex_built_in_provider_is_replaced_by_one_through_the_proxy() {
    let argv = words(&["codex", "app-server"]);
    let p = CODEX
        .point(&env(&[("CODEX_API_KEY", "sk-real")]), plain(&argv, None))
        .expect("held");
    assert_eq!(p.route.upstream, "https://api.openai.com/v1");
    assert_eq!(p.route.key, "sk-real");
    let mut out = argv.clone();
    p.argv(&mut out, "http://127.0.0.1:3128");
    // No user arguments: right after the program, before the subcommand.
    assert_eq!(out[0], "codex");
    assert_eq!(out[1], "-c");
    assert_eq!(out.last().unwrap(), "app-server");
    assert!(
        out.contains(&"model_provider=\"oneshot_openai\"".to_string()),
        "{out:?}"
    );
    assert!(
        out.contains(&"model_providers.oneshot_openai.base_url=\"http://127.0.0.1:3128\"".into()),
        "{out:?}"
    );
    assert!(
        out.contains(&"model_providers.oneshot_openai.env_key=\"OPENAI_API_KEY\"".into()),
        "{out:?}"
    );
    // Both key variables hold the placeholder; no base URL variable is set.
    let e = p.env("http://127.0.0.1:3128");
    assert_eq!(
        e,
        vec![
            ("OPENAI_API_KEY".to_string(), PLACEHOLDER_KEY.to_string()),
            ("CODEX_API_KEY".to_string(), PLACEHOLDER_KEY.to_string()),
        ]
    );
}

#[test]
fn codex_custom_provider_on_the_command_line_keeps_its_upstream_and_key_variable() {
    let argv = words(&[
        "codex",
        "exec",
        "--json",
        "-c",
        "model_provider=\"fake\"",
        "--config",
        "model_providers.fake.base_url=\"http://127.0.0.1:4010/v1\"",
        "-c",
        "model_providers.fake.env_key=FAKE_KEY",
        "-",
    ]);
    let p = CODEX
        .point(
            &env(&[("FAKE_KEY", "k1"), ("OPENAI_API_KEY", "other")]),
            AgentWords {
                argv: &argv,
                user_args: &argv[3..9],
                program_len: 1,
                own_dir: None,
            },
        )
        .expect("held");
    assert_eq!(p.route.upstream, "http://127.0.0.1:4010/v1");
    assert_eq!(p.route.key, "k1");
    let mut out = argv.clone();
    p.argv(&mut out, "http://127.0.0.1:3128");
    // After the user's overrides (so it wins), before the prompt's `-`.
    assert_eq!(
        out[9..],
        words(&[
            "-c",
            "model_providers.fake.base_url=\"http://127.0.0.1:3128\"",
            "-"
        ])[..]
    );
    assert_eq!(
        p.env("x"),
        vec![("FAKE_KEY".to_string(), PLACEHOLDER_KEY.to_string())]
    );
}

#[test]
fn codex_provider_from_config_toml_and_its_profile() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("config.toml"),
        r#"
model_provider = "plain"
profile = "work"
[profiles.work]
model_provider = "azure"
[model_providers.azure]
base_url = "https://x.openai.azure.com/openai"
env_key = "AZURE_OPENAI_API_KEY"
[model_providers.plain]
base_url = "http://localhost:11434/v1"
"#,
    )
    .unwrap();
    let argv = words(&["codex", "app-server"]);
    let at = |argv| plain(argv, Some(dir.path()));
    let p = CODEX
        .point(&env(&[("AZURE_OPENAI_API_KEY", "az")]), at(&argv))
        .expect("held");
    assert_eq!(p.route.upstream, "https://x.openai.azure.com/openai");
    assert_eq!(p.route.key, "az");
    // `--profile` on the command line picks another; a provider without a key variable (a
    // local model) is not held.
    let other = words(&["codex", "--profile", "none", "exec"]);
    assert!(
        CODEX
            .point(
                &env(&[("AZURE_OPENAI_API_KEY", "az"), ("OPENAI_API_KEY", "o")]),
                at(&other)
            )
            .is_none()
    );
    // The key variable unset: not held either.
    assert!(CODEX.point(&env(&[]), at(&argv)).is_none());
}

#[test]
fn codex_without_a_key_in_the_environment_is_not_held() {
    let argv = words(&["codex", "app-server"]);
    let none = CODEX.point(
        &env(&[("OPENAI_API_KEY", PLACEHOLDER_KEY)]),
        plain(&argv, None),
    );
    assert!(none.is_none());
}

#[test]
fn a_base_url_variable_is_set_to_the_proxy() {
    let api = ModelApi {
        provider: Provider::Anthropic,
        via: Via::BaseUrlVar("ANTHROPIC_BASE_URL"),
        key_vars: &["ANTHROPIC_API_KEY"],
        default_base: "https://api.anthropic.com",
    };
    let argv = words(&["claude", "-p"]);
    let p = api
        .point(&env(&[("ANTHROPIC_API_KEY", "k")]), plain(&argv, None))
        .expect("held");
    assert_eq!(p.route.upstream, "https://api.anthropic.com");
    let mut out = argv.clone();
    p.argv(&mut out, "p");
    assert_eq!(out, argv, "argv untouched");
    assert_eq!(
        p.env("http://127.0.0.1:9"),
        vec![
            (
                "ANTHROPIC_BASE_URL".to_string(),
                "http://127.0.0.1:9".to_string()
            ),
            ("ANTHROPIC_API_KEY".to_string(), PLACEHOLDER_KEY.to_string()),
        ]
    );
}
