// A small Markdown reader for the embedded operator docs. It never builds
// HTML: it returns blocks and inline spans that Markdown.svelte renders as
// elements with text content, so nothing in a document can inject markup
// or script. Links keep only http(s), mailto and in-page targets; links to
// another doc (foo.md, foo.md#part) become help links (#/help/foo).
//
// Covered: ATX headings, paragraphs, fenced code, bullet and numbered
// lists (one level, continuation lines), block quotes, pipe tables,
// horizontal rules; inline code, **strong**, *em*/_em_, [links](…) and
// <https://autolinks>.

export type Inline =
  | { t: 'text'; v: string }
  | { t: 'code'; v: string }
  | { t: 'strong'; c: Inline[] }
  | { t: 'em'; c: Inline[] }
  | { t: 'link'; href: string; c: Inline[] };

export type Block =
  | { t: 'h'; level: number; c: Inline[]; id: string }
  | { t: 'p'; c: Inline[] }
  | { t: 'code'; v: string; lang: string }
  | { t: 'ul' | 'ol'; items: Inline[][] }
  | { t: 'quote'; c: Inline[] }
  | { t: 'table'; head: Inline[][]; rows: Inline[][][] }
  | { t: 'hr' };

/** safeHref maps a link target to a safe one, or '' (the link is dropped). */
export function safeHref(raw: string): string {
  const href = raw.trim();
  if (/^https?:\/\//i.test(href) || /^mailto:/i.test(href)) return href;
  if (/^#[A-Za-z0-9_-]*$/.test(href)) return href;
  const m = /^(?:\.\/)?([a-z0-9](?:[a-z0-9-]{0,62}[a-z0-9])?)\.md(#[A-Za-z0-9_-]*)?$/.exec(href);
  if (m) return `#/help/${m[1]}`;
  return '';
}

/** slugify makes a heading's anchor id, GitHub style. */
export function slugify(s: string): string {
  return s.toLowerCase().replace(/[^a-z0-9 _-]/g, '').trim().replace(/\s+/g, '-');
}

export function parseInline(s: string): Inline[] {
  const out: Inline[] = [];
  let text = '';
  const flush = () => {
    if (text) out.push({ t: 'text', v: text });
    text = '';
  };
  let i = 0;
  while (i < s.length) {
    const c = s[i];
    if (c === '\\' && i + 1 < s.length && /[\\`*_[\]()<>#|!-]/.test(s[i + 1])) {
      text += s[i + 1];
      i += 2;
      continue;
    }
    if (c === '`') {
      let n = 1;
      while (s[i + n] === '`') n++;
      const fence = '`'.repeat(n);
      const end = s.indexOf(fence, i + n);
      if (end > 0) {
        flush();
        out.push({ t: 'code', v: s.slice(i + n, end).replace(/^ (.*) $/, '$1') });
        i = end + n;
        continue;
      }
    }
    if ((c === '*' || c === '_') && s[i + 1] === c) {
      const end = s.indexOf(c + c, i + 2);
      if (end > i + 2) {
        flush();
        out.push({ t: 'strong', c: parseInline(s.slice(i + 2, end)) });
        i = end + 2;
        continue;
      }
    }
    if ((c === '*' || c === '_') && s[i + 1] && s[i + 1] !== ' ' && (c === '*' || i === 0 || /\W/.test(s[i - 1]))) {
      const end = s.indexOf(c, i + 1);
      if (end > i + 1 && s[end - 1] !== ' ' && (c === '*' || end + 1 >= s.length || /\W/.test(s[end + 1]))) {
        flush();
        out.push({ t: 'em', c: parseInline(s.slice(i + 1, end)) });
        i = end + 1;
        continue;
      }
    }
    if (c === '[') {
      const close = matching(s, i, '[', ']');
      if (close > 0 && s[close + 1] === '(') {
        const pclose = matching(s, close + 1, '(', ')');
        if (pclose > 0) {
          flush();
          const label = parseInline(s.slice(i + 1, close));
          const href = safeHref(s.slice(close + 2, pclose).split(/\s+"/)[0]);
          if (href) out.push({ t: 'link', href, c: label });
          else out.push(...label);
          i = pclose + 1;
          continue;
        }
      }
    }
    if (c === '<') {
      const m = /^<(https?:\/\/[^\s<>]+)>/.exec(s.slice(i));
      if (m) {
        flush();
        out.push({ t: 'link', href: m[1], c: [{ t: 'text', v: m[1] }] });
        i += m[0].length;
        continue;
      }
    }
    text += c;
    i++;
  }
  flush();
  return out;
}

function matching(s: string, at: number, open: string, close: string): number {
  let depth = 0;
  for (let i = at; i < s.length; i++) {
    if (s[i] === '\\') {
      i++;
      continue;
    }
    if (s[i] === '`') {
      const end = s.indexOf('`', i + 1);
      if (end < 0) return -1;
      i = end;
      continue;
    }
    if (s[i] === open) depth++;
    else if (s[i] === close && --depth === 0) return i;
  }
  return -1;
}

function cells(line: string): string[] {
  let l = line.trim();
  if (l.startsWith('|')) l = l.slice(1);
  if (l.endsWith('|') && !l.endsWith('\\|')) l = l.slice(0, -1);
  const out: string[] = [];
  let cur = '';
  let code = false;
  for (let i = 0; i < l.length; i++) {
    const c = l[i];
    if (c === '\\' && l[i + 1] === '|') {
      cur += '|';
      i++;
    } else if (c === '`') {
      code = !code;
      cur += c;
    } else if (c === '|' && !code) {
      out.push(cur.trim());
      cur = '';
    } else cur += c;
  }
  out.push(cur.trim());
  return out;
}

const isTableSep = (l: string) => /^\s*\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?\s*$/.test(l);
const bullet = /^\s{0,3}[-*+]\s+(.*)$/;
const numbered = /^\s{0,3}\d{1,9}[.)]\s+(.*)$/;

export function parseMarkdown(src: string): Block[] {
  const lines = src.replace(/\r\n?/g, '\n').split('\n');
  const out: Block[] = [];
  const ids = new Map<string, number>();
  let i = 0;
  while (i < lines.length) {
    const line = lines[i];
    if (!line.trim()) {
      i++;
      continue;
    }
    const fence = /^\s{0,3}(```+|~~~+)\s*([\w+-]*)/.exec(line);
    if (fence) {
      const body: string[] = [];
      i++;
      while (i < lines.length && !lines[i].trim().startsWith(fence[1])) body.push(lines[i++]);
      i++;
      out.push({ t: 'code', v: body.join('\n'), lang: fence[2] });
      continue;
    }
    const h = /^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$/.exec(line);
    if (h) {
      let id = slugify(h[2]);
      const n = ids.get(id) ?? 0;
      ids.set(id, n + 1);
      if (n) id += `-${n}`;
      out.push({ t: 'h', level: h[1].length, c: parseInline(h[2]), id });
      i++;
      continue;
    }
    if (/^\s{0,3}([-*_])(\s*\1){2,}\s*$/.test(line)) {
      out.push({ t: 'hr' });
      i++;
      continue;
    }
    if (line.includes('|') && i + 1 < lines.length && isTableSep(lines[i + 1])) {
      const head = cells(line).map(parseInline);
      i += 2;
      const rows: Inline[][][] = [];
      while (i < lines.length && lines[i].trim() && lines[i].includes('|')) rows.push(cells(lines[i++]).map(parseInline));
      out.push({ t: 'table', head, rows });
      continue;
    }
    if (/^\s{0,3}>/.test(line)) {
      const body: string[] = [];
      while (i < lines.length && /^\s{0,3}>/.test(lines[i])) body.push(lines[i++].replace(/^\s{0,3}>\s?/, ''));
      out.push({ t: 'quote', c: parseInline(body.join(' ')) });
      continue;
    }
    const kind = bullet.test(line) ? 'ul' : numbered.test(line) ? 'ol' : '';
    if (kind) {
      const re = kind === 'ul' ? bullet : numbered;
      const items: string[] = [];
      while (i < lines.length) {
        const l = lines[i];
        const m = re.exec(l);
        if (m) items.push(m[1]);
        else if (l.trim() && /^\s+/.test(l) && items.length) items[items.length - 1] += ' ' + l.trim();
        else if (!l.trim() && i + 1 < lines.length && (re.test(lines[i + 1]) || /^\s{2,}\S/.test(lines[i + 1]))) {
          i++;
          continue;
        } else break;
        i++;
      }
      out.push({ t: kind, items: items.map(parseInline) });
      continue;
    }
    const para: string[] = [];
    while (i < lines.length && lines[i].trim() && !/^\s{0,3}(#{1,6}\s|```|~~~|>)/.test(lines[i]) && !bullet.test(lines[i]) && !numbered.test(lines[i])) {
      para.push(lines[i++].trim());
    }
    if (!para.length) {
      para.push(lines[i++].trim());
    }
    out.push({ t: 'p', c: parseInline(para.join(' ')) });
  }
  return out;
}
