#!/bin/sh
# The oneshot demo: a worker and an auditor (small scripts) loop in a scratch directory until
# the auditor accepts. No API key, no network. Usage: sh examples/demo/run.sh
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
scratch=$(mktemp -d "${TMPDIR:-/tmp}/oneshot-demo.XXXXXX")
# The agents work in work/; oneshot keeps its state beside it, out of their reach.
mkdir "$scratch/work"
echo "demo: scratch directory $scratch"
# Cargo shows its progress on stderr; stdout carries its JSON messages, the last executable
# among them is the binary, wherever CARGO_TARGET_DIR or a config put the target directory.
echo "demo: building oneshot (the first build takes a few minutes)"
oneshot=$(cargo build --manifest-path "$root/Cargo.toml" --bin oneshot \
    --message-format=json-render-diagnostics |
    sed -n 's/.*"executable":"\([^"]*\)".*/\1/p' | tail -n 1)
if [ ! -x "$oneshot" ]; then
    echo "demo: the build failed (see above)" >&2
    exit 1
fi
echo "demo: running $oneshot"
status=0
"$oneshot" --state-dir "$scratch/state" --workdir "$scratch/work" \
    --policy "$root/policies/default.lua" \
    --worker-cmd "sh $here/worker.sh" --auditor-cmd "sh $here/auditor.sh" \
    "Write fizzbuzz.sh: print the numbers 1..N (default 15), Fizz for multiples of 3, Buzz for multiples of 5, FizzBuzz for both." \
    || status=$?
echo
"$oneshot" --state-dir "$scratch/state" status
echo
echo "demo: the result, $scratch/work/fizzbuzz.sh 15:"
sh "$scratch/work/fizzbuzz.sh" 15 | tr '\n' ' '
echo
exit $status
