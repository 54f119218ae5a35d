#!/bin/sh
# Runs the agent fuzzers for $1 seconds each on corpora under build/,
# seeded by their corpus generators: fuzz-agent (the host's decoder of
# what a guest sends) and fuzz-guestd (the guest agent's handling of what
# the host sends).  Prints one line per fuzzer and "N passed, N failed".
set -u
cd "$(dirname "$0")/../.." || exit 1
secs=${1:-15}
passed=0
failed=0
for name in agent guestd; do
	fuzzer=build/fuzz/fuzz-$name
	corpus=build/fuzz/corpus-$name
	if [ ! -x "$fuzzer" ] || [ ! -x "$fuzzer-corpus" ]; then
		echo "not ok - $fuzzer is not built (make fuzz)"
		failed=$((failed + 1))
		continue
	fi
	mkdir -p "$corpus" build/fuzz/artifacts
	if ! "$fuzzer-corpus" "$corpus"; then
		echo "not ok - the seed corpus of $fuzzer could not be written"
		failed=$((failed + 1))
		continue
	fi
	log=build/fuzz/fuzz-$name.log
	if "$fuzzer" -max_total_time="$secs" -max_len=140000 -timeout=10 \
	    -rss_limit_mb=2048 -print_final_stats=1 \
	    -artifact_prefix=build/fuzz/artifacts/ "$corpus" >"$log" 2>&1
	then
		runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
		cov=$(grep -o 'cov: [0-9]*' "$log" | tail -n 1)
		echo "ok - fuzz-$name: ${runs:-?} runs in ${secs}s, $cov," \
		    "no crash"
		passed=$((passed + 1))
	else
		echo "not ok - fuzz-$name found a crash; see $log and" \
		    "build/fuzz/artifacts/"
		grep -E 'ERROR|SUMMARY|Test unit written' "$log" | head -n 5 |
		    sed 's/^/#   /'
		failed=$((failed + 1))
	fi
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
