#!/bin/sh
# Demo auditor: runs the worker's fizzbuzz.sh and compares it with the expected output.
# It ends with the verdict line oneshot's built-in verdict parser reads.
set -u
if [ ! -f fizzbuzz.sh ]; then
    echo "VERDICT: RETRY fizzbuzz.sh does not exist"
    exit 0
fi
expected='1
2
Fizz
4
Buzz
Fizz
7
8
Fizz
Buzz
11
Fizz
13
14
FizzBuzz'
actual=$(sh fizzbuzz.sh 15 2>&1)
if [ "$actual" = "$expected" ]; then
    echo "auditor: all 15 lines match"
    echo "VERDICT: DONE fizzbuzz.sh prints the right sequence"
else
    n=1
    echo "$expected" > .expected
    echo "$actual" | while IFS= read -r line; do
        want=$(sed -n "${n}p" .expected)
        [ "$line" = "$want" ] || echo "auditor: line $n: expected $want, got $line"
        n=$((n + 1))
    done
    rm -f .expected
    echo "VERDICT: RETRY line 15 must print FizzBuzz (multiples of 15 come before 3 and 5)"
fi
