package bus

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzDecodeOutput: DecodeOutput never panics on any payload, and what
// OutputMsg.Encode produces decodes to the same chunk (header fields and
// raw bytes, newlines and binary data included).
func FuzzDecodeOutput(f *testing.F) {
	f.Add("job-1", int64(0), int64(0), []byte("hello\nworld\n"), []byte(`{"v":1,"type":"output","job_id":"j","seq":3,"offset":9}`+"\nxyz"))
	f.Add("", int64(-1), int64(1<<40), []byte{0, 0xff, '\n'}, []byte("no newline"))
	f.Fuzz(func(t *testing.T, job string, seq, off int64, data, raw []byte) {
		if !utf8.ValidString(job) {
			job = strings.ToValidUTF8(job, "?") // job ids are uuids; JSON text is UTF-8
		}
		m := OutputMsg{V: MessageVersion, Type: TypeOutput, JobID: job, Seq: seq, Offset: off, Data: data}
		got, err := DecodeOutput(m.Encode())
		if err != nil {
			t.Fatalf("decode of an encoded chunk: %v", err)
		}
		if got.JobID != m.JobID || got.Seq != seq || got.Offset != off || !bytes.Equal(got.Data, data) || got.V != MessageVersion || got.Type != TypeOutput {
			t.Fatalf("round trip: %+v → %+v", m, got)
		}
		if o, err := DecodeOutput(raw); err == nil && !bytes.HasSuffix(raw, o.Data) {
			t.Fatalf("decoded data %q is not the end of %q", o.Data, raw)
		}
	})
}

// FuzzStateMsg: a state payload of any shape decodes or is refused
// without a panic, and what a worker encodes decodes to the same report.
func FuzzStateMsg(f *testing.F) {
	f.Add([]byte(`{"v":1,"type":"state","job_id":"j","worker_id":"w","seq":2,"status":"success","at":"2026-01-01T00:00:00Z","exit_code":0}`), "j", "running", int64(1))
	f.Add([]byte(`{"seq":"x"}`), "", "", int64(-5))
	f.Fuzz(func(t *testing.T, raw []byte, job, status string, seq int64) {
		job, status = strings.ToValidUTF8(job, "?"), strings.ToValidUTF8(status, "?")
		var st StateMsg
		_ = json.Unmarshal(raw, &st)
		in := StateMsg{V: MessageVersion, Type: TypeState, JobID: job, WorkerID: "w", Seq: seq, Status: status, Origin: OriginControl}
		b, err := json.Marshal(in)
		if err != nil {
			t.Fatal(err)
		}
		var out StateMsg
		if err := json.Unmarshal(b, &out); err != nil || out.Seq != seq || out.Status != in.Status || out.Origin != OriginControl {
			t.Fatalf("round trip %+v → %+v (%v)", in, out, err)
		}
	})
}
