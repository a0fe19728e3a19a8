//! What the editor stubs describe: every field, key and helper with its type and meaning.
//! A unit test checks these lists against [`super::super::HookCtx`], `Evidence`, the limit keys
//! and the top-level keys, so the stubs cannot drift from the code.

/// A documented field: name, LuaLS type, Luau type, meaning.
pub(super) type Field = (&'static str, &'static str, &'static str, &'static str);

/// The `ctx` table every hook receives.
pub(super) const CTX: &[Field] = &[
    ("session_id", "string", "string", "The session id (a UUID)."),
    (
        "state",
        "string?",
        "string?",
        "The session's current state (for guards: the FROM state), e.g. \"AUDIT_PENDING\".",
    ),
    (
        "iteration",
        "integer",
        "number",
        "The worker iteration, starting at 1 (0 before the first worker run).",
    ),
    (
        "max_iterations",
        "integer",
        "number",
        "The effective iteration budget.",
    ),
    ("task", "string", "string", "The task as the user gave it."),
    (
        "worker_prompt",
        "string",
        "string",
        "The prompt the worker got in this iteration.",
    ),
    (
        "exit_code",
        "integer?",
        "number?",
        "Exit code of the process that just finished, if any.",
    ),
    (
        "reason",
        "string?",
        "string?",
        "Why the last process stopped or the last transition happened (e.g. \"inactivity_timeout\").",
    ),
    (
        "elapsed",
        "number",
        "number",
        "Seconds since the session was created.",
    ),
    (
        "worker_output",
        "string",
        "string",
        "The tail of the worker's last output (redacted, at most 256 KiB).",
    ),
    (
        "auditor_output",
        "string",
        "string",
        "The tail of the auditor's last stdout, its answer (redacted, at most 256 KiB).",
    ),
    (
        "verdict",
        "OneshotVerdict?",
        "OneshotVerdict?",
        "The auditor's last verdict, if any.",
    ),
    (
        "critique",
        "string?",
        "string?",
        "The auditor's last reason/critique, if any.",
    ),
    (
        "confidence",
        "number?",
        "number?",
        "The auditor's confidence in [0, 1], if it gave one.",
    ),
    (
        "open_criteria_streak",
        "integer",
        "number",
        "How many verdicts in a row (in the verdict hook: the one being judged included) named the same, non-empty open criteria: a no-progress signal.",
    ),
    (
        "structured",
        "{ verdict: string, reason: string, confidence: number, open_criteria: string[] }?",
        "{verdict: string, reason: string, confidence: number, open_criteria: {string}}?",
        "verdict hook only: the auditor's answer as the object it gave, when it fits the verdict schema.",
    ),
    (
        "changed_files",
        "string[]",
        "{ string }",
        "Files changed in the workdir by the last worker run (workdir-relative).",
    ),
    (
        "workdir",
        "string",
        "string",
        "The session's working directory.",
    ),
    (
        "diff",
        "string?",
        "string?",
        "A job's panel auditors only: the changes they judge, as a git diff against the job's base (at most 256 KiB); nil in a session.",
    ),
    (
        "checks",
        "{ name: string, run: string, passed: boolean, exit_code: integer?, signal: integer?, stopped: string?, duration_ms: integer, output: string }[]",
        "{{name: string, run: string, passed: boolean, exit_code: number?, signal: number?, stopped: string?, duration_ms: number, output: string}}",
        "The last audit's checks, in the order they ran (empty before any ran): what the verdict hook sees of them.",
    ),
    (
        "messages",
        "{ id: string, actor: string, text: string, ts: integer, now: boolean, status: string, taken_iteration: integer? }[]",
        "{{id: string, actor: string, text: string, ts: number, now: boolean, status: string, taken_iteration: number?}}",
        "The humans' messages to the worker (oneshot say), oldest first; status is received, sent, held, next_prompt, taken or in_prompt.",
    ),
    (
        "egress",
        "{ host: string, port: integer, agent: string, role: OneshotRole, rule: string, address: string?, hint: string, ts: integer }[]",
        "{{host: string, port: number, agent: string, role: OneshotRole, rule: string, address: string?, hint: string, ts: number}}",
        "The connections the egress proxy refused the session's agents so far, oldest first: what refused each (rule) and the policy line that would allow it (hint).",
    ),
];

/// The `evidence` table `salvage` receives.
pub(super) const EVIDENCE: &[Field] = &[
    (
        "reason",
        "string?",
        "string?",
        "Why the worker stopped: \"exit_code\", \"inactivity_timeout\", \"worker_timeout\", \"interrupted\" or \"oneshot_died\".",
    ),
    (
        "exit_code",
        "integer?",
        "number?",
        "Exit code, when it exited.",
    ),
    (
        "signal",
        "integer?",
        "number?",
        "Signal number, when a signal ended it.",
    ),
    (
        "output_tail",
        "string",
        "string",
        "The last bytes of its combined output, redacted.",
    ),
    (
        "changed_files",
        "string[]",
        "{ string }",
        "Workdir-relative paths that changed during the run.",
    ),
    (
        "changes_source",
        "string",
        "string",
        "How the change list was obtained: \"git\" or \"snapshot\".",
    ),
];

/// The `limits` table.
pub(super) const LIMITS: &[Field] = &[
    (
        "max_iterations",
        "integer?",
        "number?",
        "Worker runs per session (default 5).",
    ),
    (
        "verdict_reasks",
        "integer?",
        "number?",
        "Times the auditor is asked again when its answer holds no verdict (default 2; 0: never).",
    ),
    (
        "inactivity_timeout",
        "(number|string)?",
        "(number | string)?",
        "Silence that kills an agent: seconds or \"5m\" (default \"5m\").",
    ),
    (
        "worker_timeout",
        "(number|string|false)?",
        "(number | string | boolean)?",
        "Wall-clock cap per worker run (default none).",
    ),
    (
        "auditor_timeout",
        "(number|string|false)?",
        "(number | string | boolean)?",
        "Wall-clock cap per auditor run (default none).",
    ),
    (
        "grace_period",
        "(number|string)?",
        "(number | string)?",
        "SIGTERM to SIGKILL delay (default \"5s\").",
    ),
    (
        "background_wait",
        "(number|string)?",
        "(number | string)?",
        "How long a worker's run waits on its agent's background tasks alone before they are stopped (default \"10m\"; inactivity does not count meanwhile).",
    ),
    (
        "retry",
        "OneshotRetry?",
        "OneshotRetry?",
        "Retries of transient provider failures (5xx, 529, 429, refused connection, cut stream).",
    ),
    (
        "budget",
        "OneshotBudget?",
        "OneshotBudget?",
        "Per-session budgets from the agents' usage reports (default none).",
    ),
    (
        "memory",
        "(integer|string|false)?",
        "(number | string | boolean)?",
        "Memory one agent may use: \"2G\", \"512M\", \"1.5GiB\" (powers of 1024) or bytes; over it the agent is stopped (default none).",
    ),
    (
        "pids",
        "(integer|false)?",
        "(number | boolean)?",
        "Processes and threads one agent's tree may hold (default none).",
    ),
    (
        "cpu",
        "(number|false)?",
        "(number | boolean)?",
        "CPU cores one agent may use, such as 1.5 (default none).",
    ),
    (
        "reserve",
        "(integer|string|false)?",
        "(number | string | boolean)?",
        "Memory the machine keeps free: another agent starts only while this much would stay free (default none).",
    ),
];

/// The `limits.retry` table.
pub(super) const RETRY: &[Field] = &[
    (
        "attempts",
        "integer?",
        "number?",
        "Retries per transient failure; 0 disables (default 3).",
    ),
    (
        "initial_delay",
        "(number|string)?",
        "(number | string)?",
        "The wait before the first retry (default \"2s\").",
    ),
    (
        "factor",
        "number?",
        "number?",
        "Each later wait is the previous one times this, at least 1 (default 2).",
    ),
    (
        "max_delay",
        "(number|string)?",
        "(number | string)?",
        "The longest wait (default \"60s\").",
    ),
];

/// The `limits.budget` table.
pub(super) const BUDGET: &[Field] = &[
    (
        "turns",
        "(integer|false)?",
        "(number | boolean)?",
        "Agent turns per session; warnings at 80 % and 95 %, FAILED budget_exceeded at 100 %.",
    ),
    (
        "tokens",
        "(integer|false)?",
        "(number | boolean)?",
        "Tokens (input plus output) per session.",
    ),
    (
        "usd",
        "(number|false)?",
        "(number | boolean)?",
        "Dollars per session, as the agents report them.",
    ),
];

/// The policy table's top-level keys.
pub(super) const POLICY: &[Field] = &[
    (
        "limits",
        "OneshotLimits?",
        "OneshotLimits?",
        "Budgets the engine enforces.",
    ),
    (
        "verdict",
        "(fun(output: string, ctx: OneshotCtx): (OneshotVerdict|OneshotVerdictTable), string?, number?)?",
        "((output: string, ctx: OneshotCtx) -> (OneshotVerdict | OneshotVerdictTable, string?, number?))?",
        "Judge the auditor's stdout (its answer; never stderr): verdict [, reason [, confidence]].",
    ),
    (
        "salvage",
        "(fun(evidence: OneshotEvidence, ctx: OneshotCtx): OneshotSalvage, string?)?",
        "((evidence: OneshotEvidence, ctx: OneshotCtx) -> (OneshotSalvage, string?))?",
        "Judge a stopped worker.",
    ),
    (
        "guards",
        "table<string, fun(ctx: OneshotCtx): boolean, string?>?",
        "{ [string]: (ctx: OneshotCtx) -> (boolean, string?) }?",
        "guards[\"FROM -> TO\"]: true, or false and a reason.",
    ),
    (
        "next_prompt",
        "(fun(ctx: OneshotCtx): string?)?",
        "((ctx: OneshotCtx) -> string?)?",
        "The worker's next prompt (nil keeps the built-in one).",
    ),
    (
        "audit_prompt",
        "(fun(ctx: OneshotCtx): string?)?",
        "((ctx: OneshotCtx) -> string?)?",
        "The auditor's prompt (nil keeps the built-in one).",
    ),
    (
        "checks",
        "(string|{ name: string?, run: string, timeout: integer? })[]|(fun(ctx: OneshotCtx): (string|{ name: string?, run: string, timeout: integer? })[]?)|nil",
        "{string | {name: string?, run: string, timeout: number?}} | ((ctx: OneshotCtx) -> {string | {name: string?, run: string, timeout: number?}}?) | nil",
        "Commands run in the workdir after the worker and before the auditor: any failure is a RETRY with its output as the critique, no auditor run.",
    ),
    (
        "resolver",
        "string?",
        "string?",
        "Who `job land` asks to resolve a rebase's conflicts when --resolver names nobody: an agent (\"claude\"), a [targets.NAME] or \"cmd:COMMAND\".",
    ),
    (
        "on_transition",
        "(fun(from: string, to: string, ctx: OneshotCtx))?",
        "((from: string, to: string, ctx: OneshotCtx) -> ())?",
        "Observe every transition; the return value is ignored.",
    ),
    (
        "on_notify",
        "(fun(ctx: { kind: string, job: string, title: string, state: string, reason: string?, link: string?, at_ms: integer, at: string, cause: string }): boolean|{ extra: table<string, string|number|boolean> }|nil, string?)?",
        "((ctx: { kind: string, job: string, title: string, state: string, reason: string?, link: string?, at_ms: number, at: string, cause: string }) -> (boolean | { extra: { [string]: string | number | boolean } } | nil, string?))?",
        "Before a [notify] event is sent: true/nil sends it, false [, reason] suppresses it, { extra = {...} } adds fields to the payload. Fails open (an error sends it as is).",
    ),
    (
        "permit",
        "(fun(tool: string, input: table?, ctx: OneshotCtx, role: OneshotRole): OneshotPermit|boolean, string?)?",
        "((tool: string, input: { [string]: any }?, ctx: OneshotCtx, role: OneshotRole) -> (OneshotPermit | boolean, string?))?",
        "Answer an agent's tool-permission request: \"allow\" or \"deny\" [, reason]. Fails closed (an error denies).",
    ),
    (
        "network",
        "{ allow: string[]?, deny: string[]? }?",
        "{ allow: { string }?, deny: { string }? }?",
        "Hosts agents may reach through the egress proxy: \"pypi.org\", \"*.npmjs.org\" (subdomains), an IP, a CIDR block, each with an optional :PORT. deny wins over allow.",
    ),
    (
        "egress",
        "(fun(ctx: OneshotCtx, req: { host: string, port: integer, agent: string, role: OneshotRole }): OneshotPermit|boolean|nil, string?)?",
        "((ctx: OneshotCtx, req: { host: string, port: number, agent: string, role: OneshotRole }) -> (OneshotPermit | boolean | nil, string?))?",
        "A connection the network lists leave open: \"allow\" or \"deny\" [, reason]; nil refuses it (not on the allowlist). Fails closed (an error refuses).",
    ),
    (
        "env",
        "{ pass: string[]?, drop: string[]? }?",
        "{ pass: { string }?, drop: { string }? }?",
        "Which of oneshot's environment variables agents get (patterns like \"NPM_*\", case-sensitive): drop wins over pass, pass over the built-in credential drops (*TOKEN*, *SECRET*, *_KEY, …).",
    ),
    (
        "continue_conversation",
        "boolean?",
        "boolean?",
        "Continue the worker's own conversation on the next iteration (default true).",
    ),
    (
        "redact",
        "string[]?",
        "{ string }?",
        "Extra secret patterns (Rust regex syntax).",
    ),
    (
        "approve",
        "(fun(result: table, job: table): \"approve\"|\"human\"|\"intervene\"|table|nil, string?)?",
        "((result: { [string]: any }, job: { [string]: any }) -> (string | { [string]: any } | nil, string?))?",
        "A job's HARVESTING outcome: \"approve\" (SUCCESS), \"human\" (APPROVAL_REQUIRED) or \"intervene\" [, reason]. Never approves a session that did not complete.",
    ),
    (
        "on_error",
        "OneshotOnError?",
        "OneshotOnError?",
        "Failure modes per hook.",
    ),
    (
        "tests",
        "(OneshotTestCase|fun(t: OneshotTest))[]?",
        "{ OneshotTestCase | (t: OneshotTest) -> () }?",
        "The policy's own tests (run by `oneshot policy test`).",
    ),
];

/// `on_error` keys with the values each may take.
pub(super) const ON_ERROR: &[Field] = &[
    (
        "verdict",
        "\"closed\"?",
        "\"closed\"?",
        "Decision hooks always fail closed.",
    ),
    (
        "salvage",
        "\"closed\"?",
        "\"closed\"?",
        "Decision hooks always fail closed.",
    ),
    (
        "next_prompt",
        "\"closed\"?",
        "\"closed\"?",
        "Decision hooks always fail closed.",
    ),
    (
        "audit_prompt",
        "\"closed\"?",
        "\"closed\"?",
        "Decision hooks always fail closed.",
    ),
    (
        "checks",
        "\"closed\"?",
        "\"closed\"?",
        "Decision hooks always fail closed.",
    ),
    (
        "approve",
        "\"closed\"?",
        "\"closed\"?",
        "Decision hooks always fail closed.",
    ),
    (
        "permit",
        "\"closed\"?",
        "\"closed\"?",
        "A failing permit always denies the tool.",
    ),
    (
        "egress",
        "\"closed\"?",
        "\"closed\"?",
        "A failing egress hook always refuses the connection.",
    ),
    (
        "guard",
        "OneshotFailMode?",
        "OneshotFailMode?",
        "\"open\": a guard error allows the transition, with a warning (default \"closed\").",
    ),
    (
        "on_transition",
        "OneshotFailMode?",
        "OneshotFailMode?",
        "\"closed\": an observer error fails the session (default \"open\").",
    ),
    (
        "on_notify",
        "\"open\"?",
        "\"open\"?",
        "A failing on_notify always sends the event as it is.",
    ),
];

/// A test case table.
pub(super) const TEST_CASE: &[Field] = &[
    ("name", "string?", "string?", "Shown in the report."),
    (
        "hook",
        "\"verdict\"|\"salvage\"|\"guard\"|\"next_prompt\"|\"audit_prompt\"|\"on_transition\"|\"permit\"|\"egress\"|\"approve\"|\"on_notify\"",
        "string",
        "The hook to call.",
    ),
    (
        "input",
        "{ output?: string, evidence?: OneshotEvidence, ctx?: OneshotCtx, tool?: string, input?: table, role?: OneshotRole, host?: string, port?: integer, agent?: string, result?: table, job?: table, event?: table }?",
        "{ output: string?, evidence: OneshotEvidence?, ctx: OneshotCtx?, tool: string?, input: { [string]: any }?, role: OneshotRole?, host: string?, port: number?, agent: string?, result: { [string]: any }?, job: { [string]: any }?, event: { [string]: any }? }?",
        "What the hook is given.",
    ),
    (
        "from",
        "string?",
        "string?",
        "For guard and on_transition: the FROM state.",
    ),
    (
        "to",
        "string?",
        "string?",
        "For guard and on_transition: the TO state.",
    ),
    (
        "expect",
        "(string|boolean|{ contains?: string, matches?: string, extra?: table })?",
        "(string | boolean | { contains: string?, matches: string?, extra: { [string]: any }? })?",
        "The expected answer.",
    ),
    (
        "reason",
        "(string|{ contains?: string, matches?: string })?",
        "(string | { contains: string?, matches: string? })?",
        "The expected reason.",
    ),
    (
        "error",
        "string?",
        "string?",
        "Expect the hook to fail with an error containing this.",
    ),
];

/// The `t` table a test function receives.
pub(super) const TEST: &[Field] = &[
    (
        "assert",
        "fun(cond: any, msg?: string): any",
        "(cond: any, msg: string?) -> any",
        "Fails the test when cond is false or nil.",
    ),
    (
        "eq",
        "fun(actual: any, expected: any, msg?: string)",
        "(actual: any, expected: any, msg: string?) -> ()",
        "Deep equality for tables, == otherwise.",
    ),
    (
        "contains",
        "fun(text: string, part: string, msg?: string)",
        "(text: string, part: string, msg: string?) -> ()",
        "Plain substring search.",
    ),
    (
        "fail",
        "fun(msg?: string)",
        "(msg: string?) -> ()",
        "Fails the test.",
    ),
];

/// The `oneshot` helper table: name, LuaLS signature (params; returns), Luau type, meaning.
pub(super) const HELPERS: &[Field] = &[
    (
        "log",
        "fun(level: \"debug\"|\"info\"|\"warn\"|\"error\", msg: string)",
        "(level: string, msg: string) -> ()",
        "Write to oneshot's log; the engine records it with the hook call.",
    ),
    (
        "glob_match",
        "fun(pattern: string, path: string): boolean",
        "(pattern: string, path: string) -> boolean",
        "Glob match (`*` within a segment, `**` across).",
    ),
    (
        "regex_find",
        "fun(pattern: string, text: string): string?, integer?, integer?, ...: string?",
        "(pattern: string, text: string) -> (string?, number?, number?, ...string?)",
        "First match, its 1-based start and inclusive end, then the capture groups; nil if none. Linear time.",
    ),
    (
        "json_decode",
        "fun(text: string): any, string?",
        "(text: string) -> (any, string?)",
        "Decoded value, or nil and a message. null decodes to oneshot.null.",
    ),
    (
        "parse_verdict",
        "fun(text: string): {verdict: \"done\"|\"retry\"|\"impossible\", reason: string?, confidence: number?}?",
        "(text: string) -> {verdict: string, reason: string?, confidence: number?}?",
        "The built-in reader: the last JSON verdict object or VERDICT: line in text, or nil if none.",
    ),
    (
        "duration",
        "fun(value: string|number): number",
        "(value: string | number) -> number",
        "Seconds from \"90s\", \"5m\", \"1h 30m\" or a number.",
    ),
    ("null", "table", "{}", "The value JSON null decodes to."),
];
