// A minimal real SMTP server on 127.0.0.1 for the browser tests: EHLO with
// AUTH PLAIN/LOGIN, MAIL, RCPT, DATA, QUIT. It records each message and the
// credentials the client sent (to prove the stored password reaches the
// mail server while the UI never shows it).
import net from 'node:net';

export async function startSmtpSink() {
  const messages = [];
  const auths = [];
  const server = net.createServer((sock) => {
    let buf = '';
    let inData = false;
    let data = '';
    let cur = { from: '', to: [] };
    let authStep = '';
    let user = '';
    const say = (l) => sock.write(`${l}\r\n`);
    say('220 sink.test ESMTP');
    sock.on('data', (d) => {
      buf += d.toString('utf8');
      let i;
      while ((i = buf.indexOf('\r\n')) >= 0) {
        const line = buf.slice(0, i);
        buf = buf.slice(i + 2);
        if (inData) {
          if (line === '.') {
            inData = false;
            // Postfix's reply shape with a queue id of this message, so a test can match the answer LCM shows.
            const queueId = `4${(messages.length + 1).toString(16).toUpperCase().padStart(4, '0')}${Date.now().toString(16).slice(-4).toUpperCase()}`;
            messages.push({ ...cur, data, queueId });
            cur = { from: '', to: [] };
            data = '';
            say(`250 2.0.0 Ok: queued as ${queueId}`);
          } else data += `${line.startsWith('..') ? line.slice(1) : line}\n`;
          continue;
        }
        if (authStep === 'plain') {
          const [, u, p] = Buffer.from(line, 'base64').toString('utf8').split('\0');
          auths.push({ user: u, password: p });
          authStep = '';
          say('235 OK');
          continue;
        }
        if (authStep === 'login-user') { user = Buffer.from(line, 'base64').toString('utf8'); authStep = 'login-pass'; say('334 UGFzc3dvcmQ6'); continue; }
        if (authStep === 'login-pass') { auths.push({ user, password: Buffer.from(line, 'base64').toString('utf8') }); authStep = ''; say('235 OK'); continue; }
        const cmd = line.slice(0, 4).toUpperCase();
        if (cmd === 'EHLO') { sock.write('250-sink.test\r\n250-AUTH PLAIN LOGIN\r\n250 8BITMIME\r\n'); }
        else if (cmd === 'HELO') say('250 sink.test');
        else if (cmd === 'AUTH') {
          const [, mech, arg] = line.split(' ');
          if (mech.toUpperCase() === 'PLAIN' && arg) {
            const [, u, p] = Buffer.from(arg, 'base64').toString('utf8').split('\0');
            auths.push({ user: u, password: p });
            say('235 OK');
          } else if (mech.toUpperCase() === 'PLAIN') { authStep = 'plain'; say('334 '); }
          else { authStep = 'login-user'; say('334 VXNlcm5hbWU6'); }
        } else if (cmd === 'MAIL') { cur.from = line.replace(/^MAIL FROM:\s*/i, ''); say('250 OK'); }
        else if (cmd === 'RCPT') { cur.to.push(line.replace(/^RCPT TO:\s*<?([^>]*)>?.*$/i, '$1')); say('250 OK'); }
        else if (cmd === 'DATA') { inData = true; say('354 go ahead'); }
        else if (cmd === 'QUIT') { say('221 bye'); sock.end(); }
        else if (cmd === 'RSET' || cmd === 'NOOP') say('250 OK');
        else say('502 not implemented');
      }
    });
    sock.on('error', () => {});
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  return {
    port: server.address().port, messages, auths,
    close: () => new Promise((r) => server.close(r)),
  };
}
