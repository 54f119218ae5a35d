// A loopback HTTP proxy that adds "Authorization: Bearer <token>" to every
// request and forwards it to mcvm-frontd, for clients that cannot send a
// token (the MCP conformance CLI).  Host and Origin pass through unchanged,
// so frontd still judges them.  It listens on loopback only.
//
//	node lib/proxy.mjs --target http://127.0.0.1:PORT --token-file FILE
//	    [--port N]
// prints "listening PORT" once ready.
import http from 'node:http';
import fs from 'node:fs';

function arg(name, dflt) {
	const i = process.argv.indexOf(name);
	return i > 0 ? process.argv[i + 1] : dflt;
}

const target = new URL(arg('--target'));
const token = fs.readFileSync(arg('--token-file'), 'utf8').trim();
const port = Number(arg('--port', '0'));

const server = http.createServer((req, res) => {
	const headers = { ...req.headers, authorization: `Bearer ${token}` };
	const up = http.request({
		host: target.hostname,
		port: target.port,
		method: req.method,
		path: req.url,
		headers,
	}, (ur) => {
		res.writeHead(ur.statusCode, ur.headers);
		ur.pipe(res);
	});
	up.on('error', () => {
		if (!res.headersSent)
			res.writeHead(502);
		res.end();
	});
	req.pipe(up);
	res.on('close', () => up.destroy());
});
server.listen(port, '127.0.0.1', () => {
	console.log(`listening ${server.address().port}`);
});
for (const sig of ['SIGTERM', 'SIGINT'])
	process.on(sig, () => process.exit(0));
