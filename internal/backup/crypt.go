// Package backup writes and reads LCM's portable encrypted backup files
// (.lcmbak), keeps the backup schedule, retention and target directory, and
// stages a restore that the next start applies before config and database
// are opened (docs/backups.md).
//
// File layout:
//
//	"LCMBAK\x00\x01"                  magic and format version (8 bytes)
//	uint32 BE n, n bytes JSON header  KDF parameters, salt, nonce prefix,
//	                                  key check, LCM version, time, dialect
//	chunks: uint32 BE len, ciphertext AES-256-GCM, at most ChunkSize plaintext
//
// The plaintext is a gzip'd tar stream (manifest.json first). Every chunk's
// nonce is the header's 4-byte prefix and the chunk's counter, and its
// additional data is the SHA-256 of the header plus a final flag: a chunk
// moved, dropped, or a stream cut short fails authentication or misses its
// final chunk, and a header changed in any byte fails every chunk.
package backup

import (
	"bufio"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"golang.org/x/crypto/scrypt"
)

// Magic starts every .lcmbak file; its last byte is the format version.
const Magic = "LCMBAK\x00\x01"

// ChunkSize is the plaintext size of one encrypted chunk. Why 1 MiB: large
// enough that the 20 bytes of framing and tag per chunk cost nothing, small
// enough that reader and writer hold two chunks at most (streamed, never
// the whole file in memory).
const ChunkSize = 1 << 20

// scrypt parameters. Why N=2^15, r=8, p=1: the RFC 7914 interactive
// setting — ~32 MiB and ~0.1 s here per derivation, paid once per backup
// or restore, well inside the 256 MiB budget.
const (
	scryptN = 1 << 15
	scryptR = 8
	scryptP = 1
)

// maxHeader bounds the JSON header a reader accepts (a fuzzed or foreign
// file cannot make it allocate more).
const maxHeader = 64 << 10

// Errors a reader reports; callers map them to clear messages.
var (
	ErrNotBackup       = errors.New("not an LCM backup file")
	ErrWrongPassphrase = errors.New("wrong passphrase for this backup")
	ErrCorrupt         = errors.New("backup file is damaged or was changed (authentication failed)")
	ErrTruncated       = errors.New("backup file is incomplete (truncated)")
)

// Header is the unencrypted, authenticated start of a backup file. The
// fields after Check let the list show version and time without the
// passphrase.
type Header struct {
	KDF         string    `json:"kdf"`
	N           int       `json:"n"`
	R           int       `json:"r"`
	P           int       `json:"p"`
	Salt        []byte    `json:"salt"`
	NoncePrefix []byte    `json:"nonce_prefix"`
	Check       []byte    `json:"check"`
	LCMVersion  string    `json:"lcm_version"`
	CreatedAt   time.Time `json:"created_at"`
	Dialect     string    `json:"dialect"`
}

// deriveKeys returns the AES key and the key-check value for pass.
func deriveKeys(h *Header, pass []byte) (enc []byte, check []byte, err error) {
	if h.KDF != "scrypt" {
		return nil, nil, fmt.Errorf("%w: unknown key derivation %q", ErrNotBackup, h.KDF)
	}
	// Refuse parameters a tampered header could use to exhaust memory.
	if h.N < 1<<14 || h.N > 1<<20 || h.R < 1 || h.R > 32 || h.P < 1 || h.P > 16 || len(h.Salt) < 16 {
		return nil, nil, fmt.Errorf("%w: key derivation parameters out of range", ErrNotBackup)
	}
	k, err := scrypt.Key(pass, h.Salt, h.N, h.R, h.P, 64)
	if err != nil {
		return nil, nil, err
	}
	m := hmac.New(sha256.New, k[32:])
	m.Write([]byte("lcm-backup-key-check"))
	return k[:32], m.Sum(nil), nil
}

// encWriter seals ChunkSize pieces as they fill.
type encWriter struct {
	w       io.Writer
	aead    cipher.AEAD
	prefix  []byte
	hdrSum  [32]byte
	buf     []byte
	out     []byte
	counter uint64
	closed  bool
}

// NewWriter writes a header for the given metadata to w and returns the
// plaintext writer; Close seals the final chunk (it does not close w).
func NewWriter(w io.Writer, pass []byte, meta Header) (io.WriteCloser, error) {
	h := meta
	h.KDF, h.N, h.R, h.P = "scrypt", scryptN, scryptR, scryptP
	h.Salt = make([]byte, 16)
	h.NoncePrefix = make([]byte, 4)
	if _, err := rand.Read(h.Salt); err != nil {
		return nil, err
	}
	if _, err := rand.Read(h.NoncePrefix); err != nil {
		return nil, err
	}
	key, check, err := deriveKeys(&h, pass)
	if err != nil {
		return nil, err
	}
	h.Check = check
	hb, err := json.Marshal(h)
	if err != nil {
		return nil, err
	}
	aead, err := newAEAD(key)
	if err != nil {
		return nil, err
	}
	var pre [12]byte
	copy(pre[:], Magic)
	binary.BigEndian.PutUint32(pre[8:], uint32(len(hb)))
	if _, err := w.Write(pre[:]); err != nil {
		return nil, err
	}
	if _, err := w.Write(hb); err != nil {
		return nil, err
	}
	return &encWriter{w: w, aead: aead, prefix: h.NoncePrefix, hdrSum: sha256.Sum256(hb),
		buf: make([]byte, 0, ChunkSize), out: make([]byte, 4, 4+ChunkSize+16)}, nil
}

func newAEAD(key []byte) (cipher.AEAD, error) {
	b, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(b)
}

func nonceAAD(prefix []byte, sum [32]byte, counter uint64, final bool) (nonce, aad []byte) {
	nonce = make([]byte, 12)
	copy(nonce, prefix)
	binary.BigEndian.PutUint64(nonce[4:], counter)
	aad = make([]byte, 33)
	copy(aad, sum[:])
	if final {
		aad[32] = 1
	}
	return nonce, aad
}

func (e *encWriter) Write(p []byte) (int, error) {
	if e.closed {
		return 0, errors.New("backup: write after close")
	}
	n := 0
	for len(p) > 0 {
		k := min(ChunkSize-len(e.buf), len(p))
		e.buf = append(e.buf, p[:k]...)
		p, n = p[k:], n+k
		if len(e.buf) == ChunkSize {
			if err := e.seal(false); err != nil {
				return n, err
			}
		}
	}
	return n, nil
}

func (e *encWriter) seal(final bool) error {
	nonce, aad := nonceAAD(e.prefix, e.hdrSum, e.counter, final)
	e.counter++
	out := e.aead.Seal(e.out[:4], nonce, e.buf, aad)
	binary.BigEndian.PutUint32(out, uint32(len(out)-4))
	e.buf = e.buf[:0]
	_, err := e.w.Write(out)
	return err
}

// Close seals what is buffered as the final chunk.
func (e *encWriter) Close() error {
	if e.closed {
		return nil
	}
	e.closed = true
	return e.seal(true)
}

// ReadHeader reads and parses the header without the passphrase.
func ReadHeader(r io.Reader) (Header, []byte, error) {
	var pre [12]byte
	if _, err := io.ReadFull(r, pre[:]); err != nil {
		return Header{}, nil, ErrNotBackup
	}
	if string(pre[:6]) != Magic[:6] {
		return Header{}, nil, ErrNotBackup
	}
	if pre[7] != Magic[7] || pre[6] != 0 {
		return Header{}, nil, fmt.Errorf("%w: file format %d is not supported by this version", ErrNotBackup, pre[7])
	}
	n := binary.BigEndian.Uint32(pre[8:])
	if n == 0 || n > maxHeader {
		return Header{}, nil, ErrNotBackup
	}
	hb := make([]byte, n)
	if _, err := io.ReadFull(r, hb); err != nil {
		return Header{}, nil, ErrTruncated
	}
	var h Header
	if err := json.Unmarshal(hb, &h); err != nil {
		return Header{}, nil, fmt.Errorf("%w: header: %v", ErrNotBackup, err)
	}
	if len(h.NoncePrefix) != 4 || len(h.Check) != 32 {
		return Header{}, nil, fmt.Errorf("%w: header fields missing", ErrNotBackup)
	}
	return h, hb, nil
}

// decReader opens chunks one at a time.
type decReader struct {
	r       *bufio.Reader
	aead    cipher.AEAD
	prefix  []byte
	hdrSum  [32]byte
	counter uint64
	plain   []byte
	in      []byte
	done    bool
}

// NewReader checks the passphrase against the header and returns the
// plaintext reader. A wrong passphrase is ErrWrongPassphrase; a damaged
// stream surfaces as ErrCorrupt or ErrTruncated from Read.
func NewReader(r io.Reader, pass []byte) (io.Reader, Header, error) {
	h, hb, err := ReadHeader(r)
	if err != nil {
		return nil, h, err
	}
	key, check, err := deriveKeys(&h, pass)
	if err != nil {
		return nil, h, err
	}
	if !hmac.Equal(check, h.Check) {
		return nil, h, ErrWrongPassphrase
	}
	aead, err := newAEAD(key)
	if err != nil {
		return nil, h, err
	}
	return &decReader{r: bufio.NewReaderSize(r, 64<<10), aead: aead, prefix: h.NoncePrefix, hdrSum: sha256.Sum256(hb),
		in: make([]byte, 0, ChunkSize+16)}, h, nil
}

func (d *decReader) Read(p []byte) (int, error) {
	for len(d.plain) == 0 {
		if d.done {
			return 0, io.EOF
		}
		if err := d.next(); err != nil {
			return 0, err
		}
	}
	n := copy(p, d.plain)
	d.plain = d.plain[n:]
	return n, nil
}

func (d *decReader) next() error {
	var lb [4]byte
	if _, err := io.ReadFull(d.r, lb[:]); err != nil {
		return ErrTruncated
	}
	n := binary.BigEndian.Uint32(lb[:])
	if n < 16 || n > ChunkSize+16 {
		return ErrCorrupt
	}
	d.in = d.in[:n]
	if _, err := io.ReadFull(d.r, d.in); err != nil {
		return ErrTruncated
	}
	// The writer seals every full chunk as it fills, so only the last,
	// short (possibly empty) chunk carries the final flag.
	final := n < ChunkSize+16
	nonce, aad := nonceAAD(d.prefix, d.hdrSum, d.counter, final)
	pt, err := d.aead.Open(d.in[:0], nonce, d.in, aad)
	if err != nil {
		return ErrCorrupt
	}
	d.counter++
	d.plain = pt
	if final {
		d.done = true
		if _, err := d.r.ReadByte(); err != io.EOF {
			return fmt.Errorf("%w: data after the final chunk", ErrCorrupt)
		}
	}
	return nil
}
