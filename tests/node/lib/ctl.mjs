// The suite's mcvmctl, for the benchmarks: MCVM_CTL is mcvmctl with its -s.
import { execFileSync } from 'node:child_process';

const CTL = (process.env.MCVM_CTL ?? '').split(' ');

// mcvmctl status's output.
export function status() {
	return execFileSync(CTL[0], [...CTL.slice(1), 'status'],
	    { encoding: 'utf8' });
}

// Until workspace ws has n warm clones ready (mcvm.conf(5)'s warm), as
// status lists them, for seconds at most.
export async function warmReady(ws, n = 1, seconds = 60) {
	const re = new RegExp(`^warm clone: vm-[0-9a-f]+ of workspace ${ws}, ` +
	    '.*ready$', 'mg');
	for (const end = Date.now() + seconds * 1000; Date.now() < end;) {
		if ((status().match(re)?.length ?? 0) >= n)
			return;
		await new Promise((r) => setTimeout(r, 200));
	}
	throw new Error(`fewer than ${n} warm clones of ${ws} are ready`);
}
