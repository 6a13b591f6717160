#!/usr/bin/env bash
# The action's sweep (action.yml, step "sweep"): farm test with every report, then, with a
# baseline, the comparison as Markdown. Always exits 0: the farm's code goes to $GITHUB_OUTPUT
# (exit-code) so the summary and the upload still run; the last step exits with it.
set -u
out="${RUNNER_TEMP:-${TMPDIR:-/tmp}}/agent-farm"
rm -rf "$out" && mkdir -p "$out"
echo "report-dir=$out" >> "$GITHUB_OUTPUT"

args=(test -i "$INPUT_SUITE" --runs "${INPUT_RUNS:-10}" --no-progress
      -o "$out/report.html" -o "$out/junit.xml" -o "$out/report.json" -o "$out/summary.md")
[ -n "${INPUT_AGENT:-}" ] && args+=(-n "$INPUT_AGENT")
[ -n "${INPUT_MATRIX:-}" ] && args+=(--matrix "$INPUT_MATRIX")
[ -n "${INPUT_HISTORY_URL:-}" ] && export FARM_HISTORY_URL="$INPUT_HISTORY_URL"
[ -n "${INPUT_BASELINE:-}" ] && args+=(--baseline "$INPUT_BASELINE")
read -r -a extra <<< "${INPUT_ARGS:-}"  # split on spaces, never evaluated by the shell

farm "${args[@]}" "${extra[@]}"
code=$?
echo "exit-code=$code" >> "$GITHUB_OUTPUT"
echo "farm test exited $code"

if [ -n "${INPUT_BASELINE:-}" ] && [ -f "$out/report.json" ]; then
    # farm test --baseline printed the comparison in the log already: once is enough (stdout muted)
    farm compare "$INPUT_BASELINE" "$out/report.json" -o "$out/comparison.md" > /dev/null \
        || echo "(farm compare exited $?: the comparison is in $out/comparison.md when it could be made)"
fi

case "${FARM_HISTORY_URL:-sqlite}" in
    sqlite*)
        # farm test left its sweep in the SQLite history's inbox beside the file unless something
        # read the history since; reading it records the sweep into the file, so that a workflow
        # caching history.sqlite alone keeps it (muted: the table is the history's, not this run's)
        farm history --last 1 > /dev/null || echo "(farm history exited $?: the sweep waits in the history's inbox)"
        ;;
esac
exit 0
