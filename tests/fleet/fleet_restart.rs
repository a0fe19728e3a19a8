//! A fleet over PostgreSQL whose database restarts mid-run (issue 23): runner processes on two
//! "machines" lose their connections while their workers run, reconnect (backing off), and
//! every job still rests once — none lost, none run twice. On a cluster of its own
//! (`pg_server::own_server`): the other tests of this binary share the process's.

use crate::fleet;

use fleet::{Fleet, pg_server, wait_until};
use std::time::Duration;

#[test]
fn postgres_restarted_mid_run_runners_reconnect_and_no_job_is_lost_or_duplicated() {
    let Some(server) = pg_server::own_server() else {
        return;
    };
    let fleet = Fleet::on(server.database());
    let laptop = fleet.machine("laptop");
    let machines: Vec<_> = (0..2).map(|i| fleet.machine(&format!("m{i}"))).collect();
    fleet.hold();
    let tokens: Vec<String> = (0..8).map(|i| format!("r{i}")).collect();
    let ids: Vec<String> = tokens.iter().map(|t| laptop.create(&fleet, t)).collect();
    let mut runners: Vec<_> = machines
        .iter()
        .map(|m| m.runner("8s", &["--parallel", "3"], &[]))
        .collect();
    let context = || {
        runners
            .iter()
            .map(|r| r.output())
            .collect::<Vec<_>>()
            .join("\n----\n")
    };
    // Six workers held mid-step, two jobs waiting.
    wait_until(Duration::from_secs(120), "six workers run", context, || {
        tokens.iter().filter(|t| !fleet.runs(t).is_empty()).count() == 6
    });
    server.restart(Duration::from_millis(1500));
    fleet.release();
    wait_until(Duration::from_secs(180), "every job rests", context, || {
        laptop
            .states()
            .iter()
            .all(|(_, s)| s == "APPROVAL_REQUIRED" || s == "INTERVENTION_REQUIRED")
    });
    let said = context();
    for r in &mut runners {
        let status = r.stop();
        assert!(status.success(), "{status:?}: {}", r.output());
    }
    let context = || said.clone();
    let pushed = fleet.pushed();
    for (id, token) in ids.iter().zip(&tokens) {
        let shown = laptop.show(id);
        assert_eq!(
            shown["job"]["state"],
            "APPROVAL_REQUIRED",
            "{shown:#}\n{}",
            context()
        );
        let runs = fleet.runs(token);
        assert_eq!(
            runs.len(),
            1,
            "job {id}'s worker ran once: {runs:?}\n{}",
            context()
        );
        let branch = shown["job"]["spec"]["branch"].as_str().unwrap();
        assert!(pushed.iter().any(|b| b == branch), "{branch}: {pushed:?}");
        let steps = shown["history"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|t| t["trigger"] == "step")
            .count();
        assert_eq!(steps, 1, "one step each: {shown:#}");
    }
    assert_eq!(pushed.len(), 8);
}
