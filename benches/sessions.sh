#!/usr/bin/env bash
# `oneshot list` and `oneshot status` over many sessions, through the real release binary.
#
#   benches/sessions.sh                    # 1,000 sessions in a temporary state dir
#   SESSIONS=5000 RUNS=21 benches/sessions.sh
#   STATE_DIR=/tmp/s benches/sessions.sh   # keep (or reuse) the sessions: compare two builds
#   ONESHOT_BIN=/path/to/oneshot benches/sessions.sh   # time that binary, build nothing
#
# The sessions are real: a few are run by the binary itself (a long multi-line task with quotes
# and braces; a worker printing ~80 KB; 1, 5 and 12 iterations, so histories of 5 to 50
# entries; COMPLETED, FAILED and REJECTED), then copied under new ids with their creation times
# spread over the last week and their files' times set to match. Each command is run RUNS
# times after one warm-up run; the median, minimum and maximum wall-clock times are printed, in
# milliseconds. Needs bash 5 and jq.
set -euo pipefail

SESSIONS=${SESSIONS:-1000}
RUNS=${RUNS:-15}
root=$(cd "$(dirname "$0")/.." && pwd)

if [[ -z ${ONESHOT_BIN:-} ]]; then
    (cd "$root" && cargo build --release --quiet)
    ONESHOT_BIN=${CARGO_TARGET_DIR:-$root/target}/release/oneshot
fi
ONESHOT_BIN=$(realpath "$ONESHOT_BIN")
command -v jq >/dev/null || { echo "sessions.sh: needs jq" >&2; exit 2; }

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
state=${STATE_DIR:-$scratch/state}
sessions=$state/sessions

seed_sessions() {
    local seeds=$scratch/seeds work=$scratch/work
    mkdir -p "$work"
    cat >"$scratch/p.lua" <<'EOF'
return { limits = { max_iterations = 12 } }
EOF
    # Done at the 5th audit, a retry before that.
    cat >"$scratch/audit5.sh" <<'EOF'
n=$(cat count 2>/dev/null || echo 0); n=$((n + 1)); echo $n > count
if [ $n -ge 5 ]; then echo 'VERDICT: DONE all "checks" pass {ok}'; else echo "VERDICT: RETRY attempt $n: the parser still rejects '}' in \"strings\""; fi
EOF
    local task
    task=$(printf 'Fix the JSON parser so that it accepts "quoted" keys and } inside strings.\n\n%s' \
        "$(for i in $(seq 40); do echo "- requirement $i: handle {\"key\": \"value with } and \\\"escapes\\\"\"} without losing data"; done)")
    local worker="sh -c 'seq 1 2000 | sed \"s/^/line of worker output, a realistic length /\"'"
    run() { (cd "$work" && rm -f count && "$ONESHOT_BIN" --state-dir "$seeds" -q "$@" >/dev/null 2>&1) || true; }
    run --worker-cmd "$worker" --auditor-cmd "echo 'VERDICT: DONE looks good'" "$task"
    run --policy "$scratch/p.lua" --worker-cmd "$worker" --auditor-cmd "sh $scratch/audit5.sh" "$task"
    run --policy "$scratch/p.lua" --worker-cmd "$worker" \
        --auditor-cmd "echo 'VERDICT: RETRY the \"parser\" still fails on {x}'" "$task"
    run --worker-cmd "echo short" --auditor-cmd "echo 'VERDICT: IMPOSSIBLE no such file'" "a short task"
    ls -d "$seeds"/sessions/*/
}

if [[ ! -d $sessions ]] || (( $(ls "$sessions" | wc -l) < SESSIONS )); then
    mapfile -t seeds < <(seed_sessions)
    (( ${#seeds[@]} > 0 )) || { echo "sessions.sh: the seed runs made no session" >&2; exit 1; }
    mkdir -p "$sessions"
    now=$(( ${EPOCHREALTIME/./} / 1000 ))
    have=$(ls "$sessions" | wc -l)
    for (( i = have; i < SESSIONS; i++ )); do
        seed=${seeds[i % ${#seeds[@]}]}
        id=$(cat /proc/sys/kernel/random/uuid)
        mkdir "$sessions/$id"
        # The log and snapshot are hard links: only oneshot.json differs between copies.
        for f in "$seed"*; do
            [[ $(basename "$f") == oneshot.json ]] || ln "$f" "$sessions/$id/"
        done
        created=$(( now - (i * 7919 % SESSIONS) * 600000 - i ))
        jq --arg id "$id" --argjson c "$created" '
            def ts: "\(. / 1000 | floor | strftime("%Y-%m-%dT%H:%M:%S")).\(1000 + . - (. / 1000 | floor) * 1000 | tostring | .[1:])Z";
            (.updated_ms - .created_ms) as $d
            | .oneshot_id = $id | .created_ms = $c | .updated_ms = $c + $d
            | .created_at = ($c | ts) | .updated_at = ($c + $d | ts)' \
            "$seed/oneshot.json" >"$sessions/$id/oneshot.json"
        # Last changed when the session last was, as a real session directory.
        updated=$(jq .updated_ms "$sessions/$id/oneshot.json")
        touch -m -d "@$(( updated / 1000 )).$(printf %03d $(( updated % 1000 )))" \
            "$sessions/$id/oneshot.json" "$sessions/$id"
    done
fi

newest=$("$ONESHOT_BIN" --state-dir "$state" list --json | jq -rs '.[0].oneshot_id')
count=$(ls "$sessions" | wc -l)
bytes=$(cat "$sessions"/*/oneshot.json | wc -c)
echo "$ONESHOT_BIN"
echo "$count sessions in $state, state files $(( bytes / 1024 )) KiB in all; $RUNS runs each"

time_cmd() {
    local label=$1 t0 t1
    shift
    "$ONESHOT_BIN" --state-dir "$state" "$@" >/dev/null
    local times=()
    for (( r = 0; r < RUNS; r++ )); do
        t0=${EPOCHREALTIME/./}
        "$ONESHOT_BIN" --state-dir "$state" "$@" >/dev/null
        t1=${EPOCHREALTIME/./}
        times+=($(( t1 - t0 )))
    done
    mapfile -t sorted < <(printf '%s\n' "${times[@]}" | sort -n)
    ms() { printf '%d.%02d' $(( $1 / 1000 )) $(( $1 % 1000 / 10 )); }
    printf '%-22s median %7s ms   min %7s   max %7s\n' "$label" \
        "$(ms "${sorted[RUNS / 2]}")" "$(ms "${sorted[0]}")" "$(ms "${sorted[RUNS - 1]}")"
}

time_cmd "list" list
time_cmd "list --json" list --json
time_cmd "status" status
time_cmd "status ID" status "$newest"
time_cmd "status ID --json" status "$newest" --json
time_cmd "--version (startup)" --version
