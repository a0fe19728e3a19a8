//! A panel member is an auditor like a session's: the same answer, under the same policy, is
//! the same verdict — its words (`LGTM` to a policy that reads it, a `VERDICT:` line) as well
//! as the JSON object it was asked for.

use super::judge;
use crate::ask::Permits;
use crate::job::record::PanelWord;
use crate::machine::Verdict;
use crate::policy::{HookCtx, PolicyHost, PolicyOptions, PolicyService};
use crate::session::tests::script::{Driver, Run, policy};
use std::sync::Arc;

/// A reviewer's `LGTM` is a done; anything else is read as the built-in reads it.
const READS_LGTM: &str = r#"return { verdict = function(output, ctx)
  if output:find("LGTM") then return "done", "looks good to me", 0.8 end
  local v = ctx.structured or oneshot.parse_verdict(output)
  if not v then return "none", "neither LGTM nor a verdict zq57" end
  return v.verdict, v.reason, v.confidence
end }"#;

/// Answers in words and in JSON, each paired with no verdict where none is read.
const ANSWERS: &[&str] = &[
    "LGTM",
    "LGTM, ship it",
    "hmm, looks fine I guess",
    "The file says hi, not hello.\nVERDICT: RETRY - f.txt must say hello",
    "Checked it.\nVERDICT: IMPOSSIBLE\nREASON: the API it needs does not exist",
    r#"{"verdict": "done", "reason": "checked", "confidence": 0.9, "open_criteria": []}"#,
    "Mostly there.\n```json\n{\n  \"verdict\": \"retry\",\n  \"reason\": \"add a test\",\n  \"confidence\": 0.6,\n  \"open_criteria\": [\"a test\"]\n}\n```",
    r#"{"verdict": "done", "reason": "no confidence given"}"#,
];

/// What a session's auditor answering `answer` comes to: its verdict, reason and confidence,
/// or `None` when the answer held none (the session asks it again).
fn session_reads(
    source: Option<&str>,
    answer: &'static str,
) -> Option<(Verdict, String, Option<f64>)> {
    let host = source.map_or_else(PolicyHost::builtin, policy);
    let mut d = Driver::new(
        host,
        "fix it",
        [Run::Exit(0, "fixed"), Run::Exit(0, answer)],
    );
    d.run();
    let v = d.session.last_verdict?;
    Some((v.verdict, v.reason.unwrap_or_default(), v.confidence))
}

/// What a panel member answering `answer` comes to, as [`session_reads`] says it.
fn panel_reads(
    source: Option<&'static str>,
    answer: &str,
) -> Result<(PanelWord, String, Option<f64>), String> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let policy = match source {
            None => PolicyService::start(None, PolicyOptions::default()).await,
            Some(src) => {
                PolicyService::spawn(None, move || {
                    PolicyHost::from_source("test.lua", src, PolicyOptions::default())
                })
                .await
            }
        }
        .unwrap();
        let permit = Permits {
            policy,
            ctx: Arc::new(HookCtx::default()),
        };
        let v = judge(permit, "cmd:judge".into(), answer.into()).await?;
        Ok((v.verdict, v.reason, v.confidence))
    })
}

fn word(v: Verdict) -> PanelWord {
    match v {
        Verdict::Done => PanelWord::Done,
        Verdict::Retry => PanelWord::Retry,
        Verdict::Impossible => PanelWord::Impossible,
    }
}

#[test]
fn a_member_answer_is_the_verdict_a_session_auditor_answer_is() {
    for source in [None, Some(READS_LGTM)] {
        for &answer in ANSWERS {
            let session = session_reads(source, answer);
            let panel = panel_reads(source, answer);
            let hook = if source.is_some() {
                "the LGTM hook"
            } else {
                "the built-in"
            };
            match session {
                Some((v, reason, confidence)) => assert_eq!(
                    panel,
                    Ok((word(v), reason, confidence)),
                    "{answer:?} under {hook}"
                ),
                None => assert!(panel.is_err(), "{answer:?} under {hook}: {panel:?}"),
            }
        }
    }
}

#[test]
fn words_read_as_verdicts() {
    // A policy that reads a reviewer's LGTM: a command member may answer just that.
    assert_eq!(
        panel_reads(Some(READS_LGTM), "LGTM"),
        Ok((PanelWord::Done, "looks good to me".into(), Some(0.8)))
    );
    // A rejection in words, with the built-in reader's VERDICT line.
    assert_eq!(
        panel_reads(None, "It says hi.\nVERDICT: RETRY - f.txt must say hello"),
        Ok((PanelWord::Retry, "f.txt must say hello".into(), None))
    );
    // The JSON object asked for stays what it was.
    assert_eq!(
        panel_reads(None, ANSWERS[5]),
        Ok((PanelWord::Done, "checked".into(), Some(0.9)))
    );
}

#[test]
fn an_answer_without_a_verdict_is_asked_again_saying_what_was_missing() {
    let builtin = panel_reads(None, "LGTM").unwrap_err();
    assert!(
        builtin.starts_with(crate::policy::NO_VERDICT_REASON),
        "{builtin}"
    );
    assert!(builtin.contains("holds no JSON object"), "{builtin}");
    let hook = panel_reads(Some(READS_LGTM), "hmm").unwrap_err();
    assert!(
        hook.starts_with("neither LGTM nor a verdict zq57"),
        "{hook}"
    );
}

#[test]
fn a_verdict_hook_that_fails_is_an_error_not_asked_again() {
    let broken = r#"return { verdict = function(output, ctx) error("broken zq58") end }"#;
    let (word, reason, _) = panel_reads(Some(broken), "LGTM").unwrap();
    assert_eq!(word, PanelWord::Error);
    assert!(reason.contains("broken zq58"), "{reason}");
}
