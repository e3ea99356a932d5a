// Console output kept as an array of lines (not DOM): the view renders only
// the visible window, so 50 MiB of output costs memory for the text and a
// few dozen DOM nodes. Handles CRLF, bare CR (progress bars rewrite the
// line) and strips ANSI escape sequences.

// eslint-disable-next-line no-control-regex
const ANSI = /\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]/g;

export class LineBuffer {
  lines: string[] = [''];
  bytes = 0;
  private pendingCR = false;

  /** Appends a chunk of output. */
  add(text: string): void {
    if (!text) return;
    this.bytes += utf8Length(text);
    if (text.indexOf('\x1b') >= 0) text = text.replace(ANSI, '');
    const parts = text.split('\n');
    const L = this.lines;
    for (let i = 0; i < parts.length; i++) {
      let p = parts[i];
      if (i > 0) {
        L.push('');
        this.pendingCR = false;
      }
      if (this.pendingCR && p.length > 0) {
        // A CR at the end of the previous chunk, not followed by LF: the
        // line is being rewritten.
        L[L.length - 1] = '';
        this.pendingCR = false;
      }
      const last = i === parts.length - 1;
      if (p.endsWith('\r')) {
        p = p.slice(0, -1);
        if (last) this.pendingCR = true;
      }
      const cr = p.lastIndexOf('\r');
      if (cr >= 0) {
        L[L.length - 1] = p.slice(cr + 1);
      } else if (p) {
        L[L.length - 1] += p;
      }
    }
  }

  get count(): number {
    const n = this.lines.length;
    return n > 1 && this.lines[n - 1] === '' ? n - 1 : n;
  }

  text(): string {
    return this.lines.join('\n');
  }
}

export function utf8Length(s: string): number {
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x80) n += 1;
    else if (c < 0x800) n += 2;
    else if (c >= 0xd800 && c <= 0xdbff) {
      n += 4;
      i++;
    } else n += 3;
  }
  return n;
}
