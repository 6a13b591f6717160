#!/usr/bin/env bash
# The action's job summary (action.yml, step "summary"): the comparison with the baseline when
# one was made, then the sweep's Markdown report, cut to stay under GitHub's 1 MiB per step.
set -u
limit=900000
dir="${SWEEP_REPORT_DIR:-}"
if [ -z "$dir" ] || [ ! -f "$dir/summary.md" ]; then
    echo "agent-farm: no report was written (see the sweep step's log)" >> "$GITHUB_STEP_SUMMARY"
    exit 0
fi
if [ -f "$dir/comparison.md" ]; then
    head -c "$limit" "$dir/comparison.md" >> "$GITHUB_STEP_SUMMARY"
    printf '\n\n' >> "$GITHUB_STEP_SUMMARY"
fi
head -c "$limit" "$dir/summary.md" >> "$GITHUB_STEP_SUMMARY"
if [ "$(wc -c < "$dir/summary.md")" -gt "$limit" ]; then
    printf '\n\n… cut here: the whole report is in the artifact (report.html)\n' >> "$GITHUB_STEP_SUMMARY"
fi
