//! The dashboard's tokens, sign-in codes and browser sessions in the store: a name is never
//! reused, only hashes are kept, a code is redeemed once and not after it expired by the
//! store's clock, and revoking a token ends what it opened.

use super::*;
use crate::job::store::{SecretHash, TokenRecord};

on_both_stores!(
    a_token_is_kept_by_its_hash_and_its_name_is_never_reused,
    a_code_is_redeemed_once_and_not_after_it_expired_by_the_stores_clock,
    revoking_a_token_ends_its_sessions_and_codes_and_refuses_new_ones,
    a_session_expires_by_the_stores_clock_and_signing_out_ends_it,
);

fn record(name: &str, scopes: &[&str]) -> Redacted<TokenRecord> {
    sealed(&TokenRecord {
        name: name.to_string(),
        scopes: scopes.iter().map(|s| s.to_string()).collect(),
        created_ms: 999,
        created_by: "ann".into(),
        revoked_ms: Some(5),
    })
}

fn h(n: u8) -> SecretHash {
    SecretHash([n; 32])
}

fn a_token_is_kept_by_its_hash_and_its_name_is_never_reused(s: &dyn JobStore) {
    let made = at(s, 1_000)
        .add_token(&record("ci", &["read"]), &h(1))
        .unwrap();
    assert_eq!(
        (made.created_ms, made.revoked_ms),
        (1_000, None),
        "the store's now, and not revoked whatever the caller said"
    );
    at(s, 2_000)
        .add_token(&record("ana", &["approve", "read"]), &h(2))
        .unwrap();
    let (found, stored) = s.token_by_hash(&h(2)).unwrap().expect("found by its hash");
    assert_eq!(found.name, "ana");
    assert_eq!(found.scopes, ["approve", "read"]);
    assert_eq!(found.created_by, "ann");
    assert_eq!(stored, h(2));
    assert!(s.token_by_hash(&h(3)).unwrap().is_none());

    let e = s.add_token(&record("ci", &["admin"]), &h(4)).unwrap_err();
    assert!(
        matches!(e, JobStoreError::TokenExists { ref name } if name == "ci"),
        "{e}"
    );
    at(s, 3_000).revoke_token("ci").unwrap();
    let e = s.add_token(&record("ci", &["read"]), &h(5)).unwrap_err();
    assert!(
        matches!(e, JobStoreError::TokenExists { .. }),
        "a revoked name stays taken: {e}"
    );
    let names: Vec<(String, Option<u64>)> = s
        .tokens()
        .unwrap()
        .into_iter()
        .map(|t| (t.name, t.revoked_ms))
        .collect();
    assert_eq!(
        names,
        [("ci".to_string(), Some(3_000)), ("ana".to_string(), None)],
        "oldest first, revoked ones too"
    );
    let e = s.revoke_token("nobody").unwrap_err();
    assert!(matches!(e, JobStoreError::NoToken { .. }), "{e}");
}

fn a_code_is_redeemed_once_and_not_after_it_expired_by_the_stores_clock(s: &dyn JobStore) {
    at(s, 10_000)
        .add_token(&record("ana", &["approve"]), &h(1))
        .unwrap();
    let expires = s.add_login_code("ana", &h(10), 600_000).unwrap();
    assert_eq!(expires, 610_000, "from the store's now");
    let first = at(s, 20_000)
        .redeem_login_code(&h(10), &h(20), 3_600_000)
        .unwrap();
    assert_eq!(first.map(|t| t.name).as_deref(), Some("ana"));
    assert_eq!(
        s.web_session(&h(20)).unwrap().map(|t| t.name).as_deref(),
        Some("ana")
    );
    assert!(
        s.redeem_login_code(&h(10), &h(21), 3_600_000)
            .unwrap()
            .is_none(),
        "a code works once"
    );
    assert!(s.web_session(&h(21)).unwrap().is_none());

    assert_eq!(s.add_login_code("ana", &h(11), 600_000).unwrap(), 620_000);
    assert!(
        at(s, 620_001)
            .redeem_login_code(&h(11), &h(22), 3_600_000)
            .unwrap()
            .is_none(),
        "expired by the store's clock"
    );
    assert!(s.web_session(&h(22)).unwrap().is_none());
    assert!(
        at(s, 20_000)
            .redeem_login_code(&h(11), &h(23), 3_600_000)
            .unwrap()
            .is_none(),
        "an expired code tried once is gone"
    );
    let e = s.add_login_code("nobody", &h(12), 600_000).unwrap_err();
    assert!(matches!(e, JobStoreError::NoToken { .. }), "{e}");
}

fn revoking_a_token_ends_its_sessions_and_codes_and_refuses_new_ones(s: &dyn JobStore) {
    at(s, 1_000)
        .add_token(&record("ana", &["approve"]), &h(1))
        .unwrap();
    s.add_token(&record("bob", &["read"]), &h(2)).unwrap();
    s.add_login_code("ana", &h(10), 600_000).unwrap();
    s.add_login_code("ana", &h(11), 600_000).unwrap();
    s.add_login_code("bob", &h(12), 600_000).unwrap();
    s.redeem_login_code(&h(10), &h(20), 3_600_000).unwrap();
    s.redeem_login_code(&h(12), &h(22), 3_600_000).unwrap();
    assert!(s.web_session(&h(20)).unwrap().is_some());

    let revoked = at(s, 2_000).revoke_token("ana").unwrap();
    assert_eq!(revoked.revoked_ms, Some(2_000));
    assert!(
        s.web_session(&h(20)).unwrap().is_none(),
        "its session ended"
    );
    assert!(
        s.token_by_hash(&h(1)).unwrap().is_none(),
        "the token refused"
    );
    assert!(
        s.redeem_login_code(&h(11), &h(21), 3_600_000)
            .unwrap()
            .is_none(),
        "its unused code ended"
    );
    let e = s.add_login_code("ana", &h(13), 600_000).unwrap_err();
    assert!(matches!(e, JobStoreError::NoToken { .. }), "{e}");
    assert_eq!(
        at(s, 3_000).revoke_token("ana").unwrap().revoked_ms,
        Some(2_000),
        "revoked once"
    );
    assert_eq!(
        s.web_session(&h(22)).unwrap().map(|t| t.name).as_deref(),
        Some("bob"),
        "another token's session is untouched"
    );
}

fn a_session_expires_by_the_stores_clock_and_signing_out_ends_it(s: &dyn JobStore) {
    at(s, 1_000)
        .add_token(&record("ana", &["read"]), &h(1))
        .unwrap();
    s.add_login_code("ana", &h(10), 600_000).unwrap();
    s.add_login_code("ana", &h(11), 600_000).unwrap();
    s.redeem_login_code(&h(10), &h(20), 5_000).unwrap();
    s.redeem_login_code(&h(11), &h(21), 5_000).unwrap();
    assert!(at(s, 6_000).web_session(&h(20)).unwrap().is_some());
    assert!(at(s, 6_001).web_session(&h(20)).unwrap().is_none());
    at(s, 2_000).end_web_session(&h(21)).unwrap();
    assert!(s.web_session(&h(21)).unwrap().is_none());
    s.end_web_session(&h(99)).unwrap();
}
