use super::*;

fn rules(allow: &[&str], deny: &[&str]) -> NetworkRules {
    NetworkRules {
        allow: allow.iter().map(|s| s.to_string()).collect(),
        deny: deny.iter().map(|s| s.to_string()).collect(),
    }
}

fn allow(rule: &str, private_ok: bool) -> Option<EgressAnswer> {
    Some(EgressAnswer::Allow {
        rule: format!("network.allow {rule:?}"),
        private_ok,
    })
}

#[test]
fn an_exact_host_matches_itself_in_any_case_and_names_the_host() {
    let r = rules(&["pypi.org"], &[]);
    assert_eq!(r.decide("pypi.org", 443), allow("pypi.org", true));
    assert_eq!(r.decide("PyPI.org.", 80), allow("pypi.org", true));
    assert_eq!(r.decide("files.pypi.org", 443), None);
    assert_eq!(r.decide("pypi.org.evil.com", 443), None);
    assert_eq!(r.decide("xpypi.org", 443), None);
}

#[test]
fn a_wildcard_matches_subdomains_at_any_depth_but_not_the_apex() {
    let r = rules(&["*.npmjs.org"], &[]);
    assert_eq!(
        r.decide("registry.npmjs.org", 443),
        allow("*.npmjs.org", false)
    );
    assert_eq!(r.decide("a.b.npmjs.org", 443), allow("*.npmjs.org", false));
    assert_eq!(r.decide("npmjs.org", 443), None);
    assert_eq!(r.decide("evilnpmjs.org", 443), None);
    // `*` alone is every host, and names none of them.
    let any = rules(&["*"], &[]);
    assert_eq!(any.decide("example.com", 1), allow("*", false));
    assert_eq!(any.decide("10.1.2.3", 1), allow("*", false));
}

#[test]
fn ip_literals_and_cidrs_match_addresses_not_names() {
    let r = rules(&["10.0.0.0/8", "192.168.1.7", "fd00::/8", "::1"], &[]);
    assert_eq!(r.decide("10.200.3.4", 22), allow("10.0.0.0/8", true));
    assert_eq!(r.decide("11.0.0.1", 22), None);
    assert_eq!(r.decide("192.168.1.7", 80), allow("192.168.1.7", true));
    assert_eq!(r.decide("192.168.1.8", 80), None);
    assert_eq!(r.decide("fd12:3456::1", 80), allow("fd00::/8", true));
    assert_eq!(r.decide("[::1]", 80), allow("::1", true));
    assert_eq!(r.decide("::2", 80), None);
    // An IPv4-mapped address is its IPv4 address.
    assert_eq!(r.decide("::ffff:10.9.9.9", 80), allow("10.0.0.0/8", true));
    // A name is not an address.
    assert_eq!(r.decide("ten.example", 80), None);
    let all = rules(&["0.0.0.0/0"], &[]);
    assert_eq!(all.decide("8.8.8.8", 53), allow("0.0.0.0/0", true));
}

#[test]
fn a_port_suffix_restricts_the_pattern_to_that_port() {
    let r = rules(
        &[
            "example.com:443",
            "[::1]:8080",
            "*.corp.test:8443",
            "127.0.0.1:9",
        ],
        &[],
    );
    assert_eq!(r.decide("example.com", 443), allow("example.com:443", true));
    assert_eq!(r.decide("example.com", 80), None);
    assert_eq!(r.decide("::1", 8080), allow("[::1]:8080", true));
    assert_eq!(r.decide("::1", 8081), None);
    assert_eq!(
        r.decide("git.corp.test", 8443),
        allow("*.corp.test:8443", false)
    );
    assert_eq!(r.decide("git.corp.test", 443), None);
    assert_eq!(r.decide("127.0.0.1", 9), allow("127.0.0.1:9", true));
}

#[test]
fn deny_wins_over_allow() {
    let r = rules(
        &["*.example.com", "10.0.0.0/8"],
        &["secret.example.com", "10.1.0.0/16"],
    );
    assert_eq!(
        r.decide("secret.example.com", 443),
        Some(EgressAnswer::Deny {
            rule: "network.deny \"secret.example.com\"".into()
        })
    );
    assert_eq!(
        r.decide("www.example.com", 443),
        allow("*.example.com", false)
    );
    assert_eq!(
        r.decide("10.1.2.3", 443),
        Some(EgressAnswer::Deny {
            rule: "network.deny \"10.1.0.0/16\"".into()
        })
    );
    assert_eq!(r.decide("10.2.2.3", 443), allow("10.0.0.0/8", true));
}

#[test]
fn bad_patterns_are_reported_and_match_nothing() {
    for bad in [
        "",
        "a..b",
        "*.",
        "ex ample.com",
        "10.0.0.0/33",
        "x/8",
        "host:port",
        "[::1",
        "[::1]x",
        "foo.*",
    ] {
        let r = rules(&[bad], &[]);
        assert!(r.check().is_err(), "{bad:?} should not be read");
        assert_eq!(r.decide("anything", 80), None, "{bad:?}");
    }
    assert!(
        rules(&["a.b", "*.c", "*", "1.2.3.4/32", "[::1]:1"], &["d:2"])
            .check()
            .is_ok()
    );
}

#[tokio::test]
async fn the_static_judge_answers_from_the_lists_then_refuses_by_default() {
    let judge = StaticJudge(rules(&["pypi.org"], &[]));
    let req = |host: &str| EgressRequest {
        host: host.into(),
        port: 443,
        agent: "claude".into(),
        role: Role::Worker,
    };
    assert_eq!(
        judge.judge(req("pypi.org")).await,
        allow("pypi.org", true).unwrap()
    );
    assert_eq!(
        judge.judge(req("example.com")).await,
        EgressAnswer::Deny {
            rule: DEFAULT_DENY_RULE.into()
        }
    );
}

#[test]
fn forbidden_names_every_class_of_address() {
    let cases: &[(&str, Option<&str>)] = &[
        ("127.0.0.1", Some("a loopback address")),
        ("127.255.0.9", Some("a loopback address")),
        ("10.0.0.1", Some("a private address")),
        ("172.16.0.1", Some("a private address")),
        ("172.31.255.255", Some("a private address")),
        ("192.168.0.1", Some("a private address")),
        ("100.64.0.1", Some("a shared (CGNAT) address")),
        ("100.127.255.254", Some("a shared (CGNAT) address")),
        ("169.254.169.254", Some("the cloud metadata address")),
        ("169.254.1.1", Some("a link-local address")),
        ("0.0.0.0", Some("the unspecified address")),
        ("0.1.2.3", Some("the unspecified address")),
        ("224.0.0.1", Some("a multicast address")),
        ("255.255.255.255", Some("the broadcast address")),
        ("240.0.0.1", Some("a reserved address")),
        ("::1", Some("a loopback address")),
        ("::", Some("the unspecified address")),
        ("fe80::1", Some("a link-local address")),
        ("febf::1", Some("a link-local address")),
        ("fc00::1", Some("a private (unique local) address")),
        ("fd12::1", Some("a private (unique local) address")),
        ("fd00:ec2::254", Some("the cloud metadata address")),
        ("ff02::1", Some("a multicast address")),
        ("::ffff:169.254.169.254", Some("the cloud metadata address")),
        ("::ffff:10.0.0.1", Some("a private address")),
        ("::ffff:127.0.0.1", Some("a loopback address")),
        ("::10.0.0.1", Some("a private address")),
        ("64:ff9b::a9fe:a9fe", Some("the cloud metadata address")),
        ("2002:7f00:1::", Some("a loopback address")),
        // Public addresses pass.
        ("8.8.8.8", None),
        ("172.32.0.1", None),
        ("100.128.0.1", None),
        ("169.253.0.1", None),
        ("2606:4700::1111", None),
        ("::ffff:8.8.8.8", None),
        ("64:ff9b::808:808", None),
        ("fec0::1", None),
    ];
    for (ip, want) in cases {
        let got = forbidden(ip.parse().unwrap());
        assert_eq!(got, *want, "{ip}");
    }
}
