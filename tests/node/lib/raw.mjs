// Raw HTTP/1.1 over TCP, for requests no well-behaved client would send.
import net from 'node:net';

// Sends bytes (string or Buffer, or an async function given the socket)
// and collects the answer until the server closes or a whole response
// has arrived.  Resolves { status, headers, body, json, closed }.
// from: a local address to connect from (another loopback address is
// another peer to the server).
export function raw(url, send, from) {
	const u = new URL(url);
	return new Promise((resolve, reject) => {
		const sock = net.connect({ port: Number(u.port), host: u.hostname,
		    localAddress: from });
		let buf = Buffer.alloc(0);
		let done = false;
		const finish = (closed) => {
			if (done)
				return;
			const r = parse(buf);
			if (!r && !closed)
				return;
			done = true;
			sock.destroy();
			resolve({ ...(r ?? { status: 0, headers: {}, body: '' }),
			    closed });
		};
		sock.on('data', (d) => {
			buf = Buffer.concat([buf, d]);
			finish(false);
		});
		sock.on('close', () => finish(true));
		sock.on('error', (e) => {
			if (e.code === 'ECONNRESET' || e.code === 'EPIPE')
				finish(true);
			else
				reject(e);
		});
		sock.on('connect', async () => {
			try {
				if (typeof send === 'function')
					await send(sock);
				else
					sock.write(send);
			} catch (e) {
				if (!done)
					finish(true);
			}
		});
	});
}

function parse(buf) {
	const end = buf.indexOf('\r\n\r\n');
	if (end < 0)
		return null;
	const head = buf.subarray(0, end).toString('latin1').split('\r\n');
	const status = Number(head[0].split(' ')[1]);
	const headers = {};
	for (const line of head.slice(1)) {
		const i = line.indexOf(':');
		headers[line.slice(0, i).toLowerCase()] = line.slice(i + 1).trim();
	}
	const len = Number(headers['content-length'] ?? 0);
	if (buf.length < end + 4 + len)
		return null;
	const body = buf.subarray(end + 4, end + 4 + len).toString('utf8');
	let json;
	try {
		json = JSON.parse(body);
	} catch {
		json = undefined;
	}
	return { status, headers, body, json };
}

export function request(method, path, host, headers, body = '') {
	const b = Buffer.isBuffer(body) ? body : Buffer.from(body);
	let h = `${method} ${path} HTTP/1.1\r\nHost: ${host}\r\n`;
	for (const [k, v] of Object.entries(headers))
		h += `${k}: ${v}\r\n`;
	if (b.length > 0 && !('Content-Length' in headers))
		h += `Content-Length: ${b.length}\r\n`;
	h += 'Connection: close\r\n\r\n';
	return Buffer.concat([Buffer.from(h, 'latin1'), b]);
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
