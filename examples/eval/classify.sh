#!/bin/sh
# A stand-in classifier for the example manifest: it answers like a model would (one nudgenik
# JSON object on stdout) from a few patterns, so the eval runs offline. The prompt arrives on
# stdin; only the terminal between the <terminal> markers is read, because the rest of the
# prompt is oneshot's (the schema's own descriptions name every state).
terminal=$(sed -n '/^<terminal>$/,/^<\/terminal>$/p')
has() { printf '%s\n' "$terminal" | grep -Eq "$1"; }
if has 'Error:|APIError'; then
  state=Error; why='an error the agent gave up on'
elif has 'Allow command|\(y/n\)|Do you want to'; then
  state='Needs Authorization'; why='a permission prompt'
elif has 'tests pass|^● Done'; then
  state=Completed; why='it reports the work done'
else
  state=Waiting; why='an idle prompt'
fi
printf '{"state": "%s", "confidence": 0.8, "evidence": ["%s"], "summary": "The terminal shows %s."}\n' \
  "$state" "$why" "$why"
