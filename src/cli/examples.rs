//! The "Examples:" section of each subcommand's `--help`: real command lines a user can copy.

/// `oneshot run --help`.
pub const RUN: &str = "\
Examples:
  oneshot run --worker-cmd 'sh fix.sh' --auditor-cmd 'sh check.sh' \"make the tests pass\"
  oneshot run --policy policies/strict.lua --hook-budget 250ms \"fix the failing test\"
  oneshot run --json \"fix the failing test\" > events.ndjson   # NDJSON for CI (docs/run-json.md)
  ONESHOT_WORKER_CMD='claude -p {prompt}' oneshot run --workdir ../app \"add a --dry-run flag\"";

/// `oneshot resume --help`.
pub const RESUME: &str = "\
Examples:
  oneshot resume                               # the latest session
  oneshot resume 1a2b3c4d                      # continue where Ctrl-C or a crash left it
  oneshot resume 1a2b --policy policies/lenient.lua
  oneshot resume 1a2b --hook-budget 250ms";

/// `oneshot status --help`.
pub const STATUS: &str = "\
Examples:
  oneshot status              # the latest session
  oneshot status 1a2b3c4d     # one session, by id or unique prefix
  oneshot status --json | jq .state";

/// `oneshot list --help`.
pub const LIST: &str = "\
Examples:
  oneshot list
  oneshot list --state stale,running --limit 10
  oneshot list --json | jq -r .session_id";

/// `oneshot log --help`.
pub const LOG: &str = "\
Examples:
  oneshot log                     # the latest session's activity log, for people
  oneshot log 1a2b3c4d            # one session's, by id or unique prefix
  oneshot log 1a2b --follow       # tail a running session
  oneshot log 1a2b --raw          # the agents' protocol lines instead of their account
  oneshot log 1a2b --json | jq 'select(.type == \"decision\")'";

/// `oneshot show --help`.
pub const SHOW: &str = "\
Examples:
  oneshot show                    # every iteration of the latest session
  oneshot show 1a2b --iteration 2 # one iteration: prompt, account, verdict, cost
  oneshot show 1a2b --full        # prompts and runs whole
  oneshot show 1a2b --json | jq '.iterations[].verdict'";

/// `oneshot policy --help`.
pub const POLICY: &str = "\
Examples:
  oneshot policy check policies/strict.lua
  oneshot policy test policies/strict.lua
  oneshot policy replay 1a2b3c4d --policy policies/lenient.lua
  oneshot policy stubs --dir .";

/// `oneshot policy check --help`.
pub const POLICY_CHECK: &str = "\
Examples:
  oneshot policy check policies/strict.lua
  oneshot policy check my.lua --json | jq .limits";

/// `oneshot policy test --help`.
pub const POLICY_TEST: &str = "\
Examples:
  oneshot policy test policies/strict.lua      # runs strict_test.lua and the policy's `tests`
  oneshot policy test my.lua --json";

/// `oneshot policy replay --help`.
pub const POLICY_REPLAY: &str = "\
Examples:
  oneshot policy replay 1a2b3c4d --policy policies/lenient.lua
  oneshot policy replay 1a2b --policy new.lua --exit-code   # exit 1 when a decision differs (CI)
  oneshot policy replay 1a2b --policy new.lua --json";

/// `oneshot policy trust --help`.
pub const POLICY_TRUST: &str = "\
Examples:
  oneshot policy trust ./oneshot-policy.lua
  oneshot policy trust policy.lua common.lua";

/// `oneshot policy stubs --help`.
pub const POLICY_STUBS: &str = "\
Examples:
  oneshot policy stubs                 # oneshot.d.lua and oneshot.d.luau here
  oneshot policy stubs --dir .types";

/// `oneshot completions --help`.
pub const COMPLETIONS: &str = "\
Examples:
  echo 'source <(oneshot completions bash)' >> ~/.bashrc
  echo 'source <(oneshot completions zsh)' >> ~/.zshrc     # after compinit
  echo 'oneshot completions fish | source' > ~/.config/fish/completions/oneshot.fish

The script asks the binary at each TAB (commands, options, session and job ids from the state
dir), so load it when the shell starts: a copy saved to a file may not match a later binary.";

/// `oneshot man --help`.
pub const MAN: &str = "\
Examples:
  oneshot man | man -l -
  oneshot man > ~/.local/share/man/man1/oneshot.1";

/// `oneshot stop --help`.
pub const STOP: &str = "\
Examples:
  oneshot stop 1a2b3c4d              # pause it (as Ctrl-C in its terminal), wait up to 30s
  oneshot stop 1a2b --no-wait
  oneshot resume 1a2b                # later: continue it";

/// `oneshot say --help`.
pub const SAY: &str = "\
Examples:
  oneshot say 1a2b \"use the v2 client, not the v1 one\"
  oneshot say 1a2b --now \"stop: the tests are in tests/unit, not test/\"
  oneshot say 1a2b --file notes.md
  git diff | oneshot say 1a2b -                      # from stdin
  oneshot log 1a2b                                   # its `message` lines: sent, taken in
  oneshot say job-1a2b \"the API moved to v2\"          # a job's worker, whichever runner holds it";

/// `oneshot prune --help`.
pub const PRUNE: &str = "\
Examples:
  oneshot prune --older-than 30d --dry-run   # what would go
  oneshot prune --older-than 30d";

/// `oneshot config --help`.
pub const CONFIG: &str = "\
Examples:
  oneshot config                            # every setting and where it came from
  oneshot --max-iterations 2 config         # what a session started with this flag would get
  oneshot config --json | jq '.values[\"worker-cmd\"]'";

/// `oneshot init --help`.
pub const INIT: &str = "\
Examples:
  oneshot init                   # oneshot.toml, oneshot.lua + oneshot_test.lua, editor stubs
  oneshot init --dir ../app
  oneshot init --force           # overwrite them";

/// `oneshot job create --help`.
pub const JOB_CREATE: &str = "\
Examples:
  oneshot job create --worker claude --auditor codex \"add a --dry-run flag\"
  oneshot job create --source ../app --base main --worker-cmd 'sh fix.sh' --auditor-cmd 'sh check.sh' --activate \"fix the failing test\"
  oneshot job create --worker claude:opus --auditor claude --panel codex --panel gemini --aggregate majority --risk low \"tidy the README\"
  git log -1 --format=%B | oneshot job create --worker claude --auditor codex --input ticket=APP-12 -
  oneshot job create --include-uncommitted \"try it on my edits\"   # worker, auditor from oneshot.toml
  oneshot job create --namer claude:haiku \"add a --dry-run flag\"   # branch and nickname by a model

The job's branch is oneshot/<words of the task>-<short id> (add-a-dry-run-flag-1a2b3c4d), or
with --namer what the target suggests (schema branch-suggest), falling back to the task's words
with a warning; `job show` prints it.
The worker's command line gets the prompt as `oneshot run` gives it ($ONESHOT_PROMPT_FILE, stdin).
After `reject --feedback`, the next prompt ends with PREVIOUS ATTEMPT / CRITIQUE / INSTRUCTION.";

/// `oneshot job activate --help`.
pub const JOB_ACTIVATE: &str = "\
Examples:
  oneshot job activate job-1a2b3c4d
  oneshot job activate job-1a2b      # a unique prefix is enough";

/// `oneshot job approve --help`.
pub const JOB_APPROVE: &str = "\
Examples:
  oneshot job diff job-1a2b3c4d && oneshot job approve job-1a2b3c4d
  ONESHOT_ACTOR=alice oneshot job approve job-1a2b   # recorded in the audit trail as alice
  oneshot job approve job-1a2b job-3c4d --land        # approve both, then land each";

/// `oneshot job land --help`.
pub const JOB_LAND: &str = "\
Examples:
  oneshot job land job-1a2b3c4d                  # rebase onto main, fast-forward main
  oneshot job land job-1a2b job-3c4d job-5e6f    # each reported; exit 1 if any did not land
  oneshot job land job-1a2b --json               # one JSON object per job

A local base branch is fast-forwarded (with `git merge --ff-only` where it is checked out, only
if that work tree is clean). A base branch that tracks a remote is fetched, the job's branch is
rebased onto it and pushed, and the pull request's URL (GitHub, GitLab) or `git request-pull`
command is printed. A plain directory gets the changed files copied back, unless it changed
them too. A conflict or a changed source leaves the base untouched and the job
INTERVENTION_REQUIRED, its reason naming the files: resolve it in the job's workspace, then
`oneshot job land` again (or `oneshot job resubmit`).";

/// `oneshot job reject --help`.
pub const JOB_REJECT: &str = "\
Examples:
  oneshot job reject job-1a2b3c4d --feedback \"the new flag is not documented in --help\"
  oneshot job reject job-1a2b --feedback \"$(cat review.md)\" && oneshot job step job-1a2b";

/// `oneshot job resubmit --help`.
pub const JOB_RESUBMIT: &str = "\
Examples:
  oneshot job show job-1a2b3c4d      # why it needs you
  oneshot job resubmit job-1a2b3c4d  # after fixing it: PENDING again, with a fresh loop bound";

/// `oneshot job suspend --help`.
pub const JOB_SUSPEND: &str = "\
Examples:
  oneshot job suspend job-1a2b3c4d
  oneshot job list --state pending   # what a runner would pick up next";

/// `oneshot job resume --help`.
pub const JOB_RESUME: &str = "\
Examples:
  oneshot job resume job-1a2b3c4d";

/// `oneshot job cancel --help`.
pub const JOB_CANCEL: &str = "\
Examples:
  oneshot job cancel job-1a2b3c4d    # also stops a runner working on it";

/// `oneshot job step --help`.
pub const JOB_STEP: &str = "\
Examples:
  oneshot job step                   # the job waiting longest
  oneshot job step job-1a2b3c4d --lease 2m";

/// `oneshot job run --help`.
pub const JOB_RUN: &str = "\
Examples:
  oneshot job run                    # until no job is left to step
  oneshot job run --parallel 4 --max-steps 20
  oneshot -q job run                 # only where each job rests";

/// `oneshot job list --help`.
pub const JOB_LIST: &str = "\
Examples:
  oneshot job list
  oneshot job list --state approval_required
  oneshot job list --json | jq -r .job_id";

/// `oneshot job show --help`.
pub const JOB_SHOW: &str = "\
Examples:
  oneshot job show job-1a2b3c4d
  oneshot job show job-1a2b --json | jq '.artifacts[-1].diff_stat'";

/// `oneshot job log --help`.
pub const JOB_LOG: &str = "\
Examples:
  oneshot job log job-1a2b3c4d              # what its sessions did, from any machine
  oneshot job log job-1a2b --follow         # watch it run, until the job rests
  oneshot job log job-1a2b --json | jq -c 'select(.record.type == \"state_change\")'";

/// `oneshot job diff --help`.
pub const JOB_DIFF: &str = "\
Examples:
  oneshot job diff job-1a2b3c4d | less
  oneshot job diff job-1a2b > review.patch";

/// `oneshot job audit --help`.
pub const JOB_RUNNERS: &str = "\
Examples:
  oneshot job runners                  # who runs steps, from which machine, and their leases
  oneshot job runners --json | jq 'select(.state == \"stale\")'   # runners gone silent";

/// `oneshot job audit --help`.
pub const JOB_AUDIT: &str = "\
Examples:
  oneshot job audit                  # every job's decisions
  oneshot job audit job-1a2b3c4d --json | jq -r '.actor + \" \" + .action'";

/// `oneshot job replay --help`.
pub const JOB_REPLAY: &str = "\
Examples:
  oneshot job replay job-1a2b3c4d --policy policies/auto-approve.lua
  oneshot job replay job-1a2b3c4d                  # the job's own policy, as edited since
  oneshot job replay job-1a2b3c4d --policy strict.lua --json | jq .verdict

Each decision the job's policy made (approve at a harvest, retry after a transient failure)
is asked again with the input it saw, through the job core's own rules (a failed session is
never auto-approved, max_loops holds). The first one that goes elsewhere is where the paths
part: what followed depended on that move and is not invented.";

/// `oneshot job cleanup --help`.
pub const JOB_CLEANUP: &str = "\
Examples:
  oneshot job land job-1a2b3c4d && oneshot job cleanup job-1a2b3c4d
  oneshot job cleanup job-1a2b3c4d --discard   # the worktree goes; an unmerged branch stays";

/// `oneshot saboteur --help`.
pub const SABOTEUR: &str = "\
Examples:
  # Does the policy catch a confident auditor that says nothing?
  oneshot --worker-cmd \"sh fix.sh\" --auditor-cmd \"oneshot saboteur nonsense\" \"make the tests pass\"
  # A worker that crashes, one that hangs past the inactivity timeout, one that floods:
  oneshot --worker-cmd \"oneshot saboteur crash --after 1s\" --auditor-cmd \"sh check.sh\" \"task\"
  oneshot --inactivity-timeout 5s --worker-cmd \"oneshot saboteur hang --ignore-term\" --auditor-cmd \"sh check.sh\" \"task\"
  oneshot --worker-cmd \"oneshot saboteur flood --bytes 100000000\" --auditor-cmd \"sh check.sh\" \"task\"
  # In a job:
  oneshot job create --worker-cmd \"oneshot saboteur nonsense --write out.txt\" --auditor-cmd \"sh check.sh\" --activate \"task\"";
