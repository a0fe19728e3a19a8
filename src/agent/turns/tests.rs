use super::*;
use serde_json::json;

fn init() -> AgentEvent {
    AgentEvent::SessionStarted {
        session_id: "s".into(),
        model: None,
        tools: vec![],
        cwd: None,
        version: None,
        transcript: None,
    }
}

fn final_() -> AgentEvent {
    AgentEvent::Final {
        success: true,
        text: None,
        structured_output: None,
        permission_denials: vec![],
    }
}

fn bg_call(id: &str) -> AgentEvent {
    AgentEvent::ToolCall {
        id: id.into(),
        name: "Bash".into(),
        input: json!({"command": "sleep 6", "run_in_background": true}),
        message_id: None,
    }
}

fn started(task: &str, call: &str) -> AgentEvent {
    AgentEvent::TaskStarted {
        task_id: task.into(),
        tool_call_id: Some(call.into()),
        description: None,
    }
}

fn ended(task: &str, status: &str) -> AgentEvent {
    AgentEvent::TaskEnded {
        task_id: task.into(),
        status: status.into(),
    }
}

fn notified(task: &str, status: &str) -> AgentEvent {
    AgentEvent::TaskNotified {
        task_id: task.into(),
        status: status.into(),
    }
}

fn info(autonomous: bool, interrupted: bool) -> AgentEvent {
    AgentEvent::TurnInfo {
        autonomous,
        interrupted,
    }
}

#[test]
fn a_background_task_keeps_the_input_open_through_its_autonomous_turn() {
    let mut t = Turns::new();
    assert_eq!(
        t.prompted(),
        Some(TurnChange::Began {
            owner: Owner::Foreground
        })
    );
    assert_eq!(t.apply(&init()), None, "already foreground");
    t.apply(&bg_call("toolu_1"));
    t.apply(&started("b1", "toolu_1"));
    assert_eq!(
        t.apply(&final_()),
        Some(TurnChange::Ended {
            owner: Owner::Foreground,
            interrupted: false
        })
    );
    assert!(t.keep_open(), "the task runs");
    assert!(t.waiting_on_background());
    assert_eq!(t.background(), vec!["b1".to_string()]);
    t.apply(&ended("b1", "completed"));
    assert!(t.keep_open(), "its turn is owed");
    assert!(!t.waiting_on_background());
    t.apply(&notified("b1", "completed"));
    assert_eq!(
        t.apply(&init()),
        Some(TurnChange::Began {
            owner: Owner::Autonomous
        })
    );
    t.apply(&info(true, false));
    assert_eq!(
        t.apply(&final_()),
        Some(TurnChange::Ended {
            owner: Owner::Autonomous,
            interrupted: false
        })
    );
    assert!(!t.keep_open());
    assert_eq!(t.counts(), (2, 1));
}

#[test]
fn a_long_foreground_tool_reported_as_a_task_does_not_keep_the_run() {
    let mut t = Turns::new();
    t.prompted();
    t.apply(&AgentEvent::ToolCall {
        id: "toolu_2".into(),
        name: "Bash".into(),
        input: json!({"command": "sleep 5"}),
        message_id: None,
    });
    t.apply(&started("b2", "toolu_2"));
    t.apply(&notified("b2", "completed"));
    // The foreground notification comes before the tool's own result, inside the turn.
    t.apply(&ended("b2", "completed"));
    t.apply(&final_());
    assert!(
        !t.keep_open(),
        "a foreground tool's notification owes no turn"
    );
}

#[test]
fn a_task_result_naming_a_background_task_marks_it() {
    let mut t = Turns::new();
    t.prompted();
    t.apply(&started("b3", "toolu_3"));
    t.apply(&AgentEvent::TaskBackgrounded {
        task_id: "b3".into(),
        tool_call_id: "toolu_3".into(),
    });
    t.apply(&final_());
    assert!(t.waiting_on_background());
}

#[test]
fn a_stopped_task_owes_no_turn() {
    let mut t = Turns::new();
    t.prompted();
    t.apply(&bg_call("c"));
    t.apply(&started("b4", "c"));
    t.apply(&final_());
    t.apply(&ended("b4", "killed"));
    t.apply(&notified("b4", "stopped"));
    assert!(!t.keep_open());
}

#[test]
fn a_message_waits_until_taken_and_routes_its_turn_to_the_foreground() {
    let mut t = Turns::new();
    t.prompted();
    t.apply(&final_());
    assert!(!t.keep_open());
    t.message_sent("m1");
    assert!(t.keep_open(), "sent, not yet taken");
    assert_eq!(
        t.apply(&init()),
        Some(TurnChange::Began {
            owner: Owner::Foreground
        })
    );
    t.apply(&AgentEvent::MessageTaken {
        message_id: "m1".into(),
    });
    t.apply(&final_());
    assert!(!t.keep_open());
}

#[test]
fn an_autonomous_turn_that_took_a_message_in_still_ends_autonomous() {
    // turns.md s3c: hello merged into the autonomous turn, one result with its origin.
    let mut t = Turns::new();
    t.prompted();
    t.apply(&bg_call("c"));
    t.apply(&started("b5", "c"));
    t.apply(&final_());
    t.apply(&ended("b5", "completed"));
    t.message_sent("hello");
    assert_eq!(
        t.apply(&init()),
        Some(TurnChange::Began {
            owner: Owner::Autonomous
        }),
        "the owed notification's turn"
    );
    t.apply(&AgentEvent::MessageTaken {
        message_id: "hello".into(),
    });
    t.apply(&info(true, false));
    assert_eq!(
        t.apply(&final_()),
        Some(TurnChange::Ended {
            owner: Owner::Autonomous,
            interrupted: false
        })
    );
    assert!(!t.keep_open());
}

#[test]
fn the_result_decides_who_owned_the_turn() {
    // The hello was dequeued first (turns.md s3d): the turn began while a wake was owed, but
    // its result has no origin — it was ours; the notification's own turn follows.
    let mut t = Turns::new();
    t.prompted();
    t.apply(&bg_call("c"));
    t.apply(&started("b6", "c"));
    t.apply(&final_());
    t.apply(&ended("b6", "completed"));
    t.message_sent("hello");
    t.apply(&init());
    t.apply(&AgentEvent::MessageTaken {
        message_id: "hello".into(),
    });
    t.apply(&info(false, false));
    assert_eq!(
        t.apply(&final_()),
        Some(TurnChange::Ended {
            owner: Owner::Foreground,
            interrupted: false
        })
    );
    assert!(t.keep_open(), "the notification's turn is still owed");
    t.apply(&init());
    t.apply(&info(true, true));
    assert_eq!(
        t.apply(&final_()),
        Some(TurnChange::Ended {
            owner: Owner::Autonomous,
            interrupted: true
        })
    );
    assert!(!t.keep_open());
}

#[test]
fn output_with_no_turn_open_is_the_agents_own_turn() {
    let mut t = Turns::new();
    t.prompted();
    t.apply(&final_());
    assert_eq!(
        t.apply(&AgentEvent::TurnStarted),
        Some(TurnChange::Began {
            owner: Owner::Autonomous
        })
    );
}

#[test]
fn a_refused_message_no_longer_keeps_the_run() {
    let mut t = Turns::new();
    t.prompted();
    t.apply(&final_());
    t.message_sent("m9");
    assert!(t.keep_open());
    t.apply(&AgentEvent::MessageRefused {
        message_id: "m9".into(),
        reason: "internal error".into(),
    });
    assert!(!t.keep_open());
}
