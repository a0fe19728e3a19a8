#!/bin/sh
# Demo worker: writes fizzbuzz.sh in its working directory (the scratch dir).
# A real agent would read the task; this one reads the prompt oneshot gives it (also on stdin)
# and reacts to the auditor's critique, which oneshot injects from iteration 2 on.
set -eu
echo "worker: iteration ${ONESHOT_ITERATION}, reading the task"
case "$ONESHOT_PROMPT" in
*CRITIQUE*FizzBuzz*)
    echo "worker: the critique says multiples of 15 are wrong; checking 15 first"
    cat > fizzbuzz.sh <<'SCRIPT'
#!/bin/sh
i=1
while [ "$i" -le "${1:-15}" ]; do
    if [ $((i % 15)) -eq 0 ]; then echo FizzBuzz
    elif [ $((i % 3)) -eq 0 ]; then echo Fizz
    elif [ $((i % 5)) -eq 0 ]; then echo Buzz
    else echo "$i"; fi
    i=$((i + 1))
done
SCRIPT
    ;;
*)
    echo "worker: first attempt (a classic mistake: testing 3 and 5 before 15)"
    cat > fizzbuzz.sh <<'SCRIPT'
#!/bin/sh
i=1
while [ "$i" -le "${1:-15}" ]; do
    if [ $((i % 3)) -eq 0 ]; then echo Fizz
    elif [ $((i % 5)) -eq 0 ]; then echo Buzz
    elif [ $((i % 15)) -eq 0 ]; then echo FizzBuzz
    else echo "$i"; fi
    i=$((i + 1))
done
SCRIPT
    ;;
esac
chmod +x fizzbuzz.sh
echo "worker: wrote fizzbuzz.sh ($(wc -l < fizzbuzz.sh) lines)"
