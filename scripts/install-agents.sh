#!/usr/bin/env bash
# Installs the pinned agent CLIs that tests/agents/main.rs drives against a fake model server.
#
#   scripts/install-agents.sh [DIR]     (DIR defaults to .cache/agents in the repository)
#
# Layout: DIR/<name>/node_modules/.bin/<cli> for the npm CLIs, DIR/aider/venv/bin/aider for Aider.
# Each CLI is skipped when DIR already holds the pinned version, so CI reuses its cache. npm's and
# pip's download caches also live under DIR (inside the clone's ignored .cache/), never in $HOME.
# The versions are pinned because newer Claude Code releases need Node >= 22 and because these
# tests double as a canary for protocol changes: bumping a pin is a deliberate, reviewed change.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
dir="${1:-$root/.cache/agents}"
mkdir -p "$dir"
dir="$(cd "$dir" && pwd)"
export npm_config_cache="$dir/.npm-cache" PIP_CACHE_DIR="$dir/.pip-cache"
# No telemetry, no prompts, no audit round-trips: only the registry is reachable in CI.
export npm_config_fund=false npm_config_audit=false npm_config_update_notifier=false
export PIP_DISABLE_PIP_VERSION_CHECK=1

# installed_npm NAME PACKAGE: the version of PACKAGE under DIR/NAME, or nothing.
installed_npm() {
    local pj="$dir/$1/node_modules/$2/package.json"
    [ -f "$pj" ] && node -e 'process.stdout.write(require(process.argv[1]).version)' "$pj" || true
}

npm_cli() {
    local name=$1 package=$2 version=$3 start=$SECONDS
    if [ "$(installed_npm "$name" "$package")" = "$version" ]; then
        echo "install-agents: $package@$version already installed"
        return
    fi
    echo "install-agents: installing $package@$version…"
    rm -rf "${dir:?}/$name"
    mkdir -p "$dir/$name"
    npm install --prefix "$dir/$name" --no-save --loglevel=error "$package@$version" >/dev/null
    echo "install-agents: $package@$version took $((SECONDS - start))s"
}

aider_cli() {
    local version=$1 start=$SECONDS venv="$dir/aider/venv"
    # Ask aider itself: a venv's scripts hold absolute paths, so a moved cache fails here and is
    # reinstalled instead of failing the tests.
    if [ -x "$venv/bin/aider" ] && [ "$("$venv/bin/aider" --version 2>/dev/null)" = "aider $version" ]; then
        echo "install-agents: aider-chat==$version already installed"
        return
    fi
    echo "install-agents: installing aider-chat==$version…"
    rm -rf "${dir:?}/aider"
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet "aider-chat==$version"
    echo "install-agents: aider-chat==$version took $((SECONDS - start))s"
}

for tool in node npm python3; do
    command -v "$tool" >/dev/null || { echo "install-agents: $tool is required" >&2; exit 1; }
done
npm_cli claude @anthropic-ai/claude-code 2.1.197
npm_cli codex @openai/codex 0.169.0
npm_cli gemini @google/gemini-cli 0.61.0
# Cline is a Node wrapper around a Bun-compiled binary: ~25 s and 439 MB installed.
npm_cli cline cline 3.0.65
aider_cli 0.86.2
echo "install-agents: done in ${SECONDS}s ($dir)"
