package main

import (
	"encoding/base64"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lcmproject/lcm/internal/testutil"
)

// TestPortalE2E drives the portal messages through the real binary with a
// bearer token on SQLite and PostgreSQL: create, update, get, list, the
// visible list, 404 and 400 {error}, delete.
func TestPortalE2E(t *testing.T) {
	for _, db := range testutil.Databases(t) {
		t.Run(db.Name, func(t *testing.T) {
			a := testutil.StartAPI(t, testutil.APIOptions{Dev: true, DatabaseURL: db.URL})
			lr, _ := e2eLoginAs(t, a, "admin", a.AdminPassword)
			tok := lr.Token
			type ann struct {
				ID, Title, Body, Severity string
				Active                    bool
				StartsAt, EndsAt          *string
				UpdatedAt                 string
			}
			var created ann
			resp, body := a.Do("POST", "/api/v1/admin/announcements/create", tok, map[string]any{
				"title": "Maintenance", "body": "Tonight", "severity": "critical", "active": true, "startsAt": "", "endsAt": "2099-01-01T00:00:00Z"}, &created)
			if resp.StatusCode != http.StatusCreated || created.ID == "" || created.UpdatedAt == "" || created.EndsAt == nil {
				t.Fatalf("create: %d %s", resp.StatusCode, body)
			}
			var visible []ann
			if resp, body := a.Do("GET", "/api/v1/announcements/visible", tok, nil, &visible); resp.StatusCode != 200 || len(visible) != 1 || visible[0].ID != created.ID {
				t.Fatalf("visible: %d %s", resp.StatusCode, body)
			}
			var updated ann
			resp, body = a.Do("POST", "/api/v1/admin/announcements/"+created.ID+"/update", tok, map[string]any{
				"title": "Maintenance done", "severity": "info", "active": false}, &updated)
			if resp.StatusCode != 200 || updated.Title != "Maintenance done" || updated.Active {
				t.Fatalf("update: %d %s", resp.StatusCode, body)
			}
			if resp, body := a.Do("GET", "/api/v1/announcements/visible", tok, nil, &visible); resp.StatusCode != 200 || len(visible) != 0 {
				t.Fatalf("visible after deactivation: %d %s", resp.StatusCode, body)
			}
			var got ann
			if resp, body := a.Do("GET", "/api/v1/admin/announcements/"+created.ID, tok, nil, &got); resp.StatusCode != 200 || got != updated {
				t.Fatalf("get: %d %s", resp.StatusCode, body)
			}
			var list []ann
			if resp, body := a.Do("GET", "/api/v1/admin/announcements", tok, nil, &list); resp.StatusCode != 200 || len(list) != 1 {
				t.Fatalf("list: %d %s", resp.StatusCode, body)
			}
			for _, c := range []struct {
				path   string
				status int
			}{
				{"/api/v1/admin/announcements/00000000-0000-4000-8000-000000000000/update", 404},
				{"/api/v1/admin/announcements/not-a-uuid/update", 400},
			} {
				var e struct{ Error string }
				if resp, body := a.Do("POST", c.path, tok, map[string]any{"title": "x"}, &e); resp.StatusCode != c.status || e.Error == "" {
					t.Fatalf("%s: %d %s", c.path, resp.StatusCode, body)
				}
			}
			var e struct{ Error string }
			if resp, body := a.Do("POST", "/api/v1/admin/announcements/create", tok, map[string]any{"title": "x", "severity": "urgent"}, &e); resp.StatusCode != 400 || e.Error == "" {
				t.Fatalf("bad severity: %d %s", resp.StatusCode, body)
			}
			if resp, body := a.Do("GET", "/api/v1/announcements/visible", "", nil, nil); resp.StatusCode != 401 {
				t.Fatalf("anonymous visible: %d %s", resp.StatusCode, body)
			}
			if resp, body := a.Do("POST", "/api/v1/admin/announcements/"+created.ID+"/delete", tok, nil, nil); resp.StatusCode != 204 {
				t.Fatalf("delete: %d %s", resp.StatusCode, body)
			}
		})
	}
}

// TestSpeechE2E posts a real recording (espeak-ng → ffmpeg webm/opus, as a
// browser records) to the real binary with a bearer token, with the local
// provider and a phrase list; a 26 MiB body gets 413 {error}.
func TestSpeechE2E(t *testing.T) {
	for _, tool := range []string{"ffmpeg", "espeak-ng", "pocketsphinx_continuous"} {
		testutil.RequireTool(t, tool)
	}
	a := testutil.StartAPI(t, testutil.APIOptions{Dev: true})
	lr, _ := e2eLoginAs(t, a, "admin", a.AdminPassword)
	tok := lr.Token
	phrases := []string{"restart the web server", "open the settings page"}
	var set map[string]any
	if resp, body := a.Do("PUT", "/api/v1/settings/speech", tok, map[string]any{"provider": "local", "phrases": phrases}, &set); resp.StatusCode != 200 || set["keyVerified"] != true {
		t.Fatalf("save settings: %d %s", resp.StatusCode, body)
	}

	dir := t.TempDir()
	wav, webm := filepath.Join(dir, "s.wav"), filepath.Join(dir, "s.webm")
	if out, err := exec.Command("espeak-ng", "-w", wav, phrases[0]).CombinedOutput(); err != nil {
		t.Fatalf("espeak-ng: %v %s", err, out)
	}
	if out, err := exec.Command("ffmpeg", "-nostdin", "-loglevel", "error", "-i", wav, "-c:a", "libopus", "-b:a", "32k", "-ar", "48000", webm).CombinedOutput(); err != nil {
		t.Fatalf("ffmpeg: %v %s", err, out)
	}
	audio, err := os.ReadFile(webm)
	if err != nil {
		t.Fatal(err)
	}
	var out struct{ Text string }
	resp, body := a.Do("POST", "/v1/speech/stt", tok, map[string]string{"audio": base64.StdEncoding.EncodeToString(audio), "mime_type": "audio/webm;codecs=opus"}, &out)
	if resp.StatusCode != 200 || out.Text != phrases[0] {
		t.Fatalf("stt: %d %s", resp.StatusCode, body)
	}
	var vs struct{ Voices []map[string]any }
	if resp, body := a.Do("GET", "/v1/speech/voices", tok, nil, &vs); resp.StatusCode != 200 || len(vs.Voices) == 0 {
		t.Fatalf("voices: %d %s", resp.StatusCode, body)
	}
	if resp, body := a.Do("POST", "/v1/speech/stt", "", map[string]string{"audio": "AAAA", "mime_type": "audio/webm"}, nil); resp.StatusCode != 401 {
		t.Fatalf("anonymous stt: %d %s", resp.StatusCode, body)
	}
	big := []byte(`{"mime_type":"audio/webm","audio":"` + strings.Repeat("A", 26<<20) + `"}`)
	var e struct{ Error string }
	if resp, body := a.Do("POST", "/v1/speech/stt", tok, big, &e); resp.StatusCode != http.StatusRequestEntityTooLarge || e.Error == "" {
		t.Fatalf("26 MiB: %d %.200s", resp.StatusCode, body)
	}
}
