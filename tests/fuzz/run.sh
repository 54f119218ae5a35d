#!/bin/sh
# Runs the agent decoder fuzzer for $1 seconds on a corpus under build/,
# seeded with one valid frame of each message type.  Prints one line and
# "N passed, N failed".
set -u
cd "$(dirname "$0")/../.." || exit 1
secs=${1:-15}
fuzzer=build/fuzz/fuzz-agent
corpus=build/fuzz/corpus-agent
if [ ! -x "$fuzzer" ] || [ ! -x build/fuzz/fuzz-agent-corpus ]; then
	echo "not ok - $fuzzer is not built (make fuzz)"
	echo "0 passed, 1 failed"
	exit 1
fi
mkdir -p "$corpus" build/fuzz/artifacts
if ! build/fuzz/fuzz-agent-corpus "$corpus"; then
	echo "not ok - the seed corpus could not be written"
	echo "0 passed, 1 failed"
	exit 1
fi
log=build/fuzz/fuzz-agent.log
if "$fuzzer" -max_total_time="$secs" -max_len=140000 -timeout=10 \
    -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix=build/fuzz/artifacts/ "$corpus" >"$log" 2>&1; then
	runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
	cov=$(grep -o 'cov: [0-9]*' "$log" | tail -n 1)
	echo "ok - fuzz-agent: ${runs:-?} runs in ${secs}s, $cov, no crash"
	echo "1 passed, 0 failed"
else
	echo "not ok - fuzz-agent found a crash; see $log and build/fuzz/artifacts/"
	grep -E 'ERROR|SUMMARY|Test unit written' "$log" | head -n 5 |
	    sed 's/^/#   /'
	echo "0 passed, 1 failed"
	exit 1
fi
