package speechsvc

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/speech"
	"github.com/lcmproject/lcm/internal/store"
	"github.com/lcmproject/lcm/internal/testutil"
)

const testKey = "sk-test-speech-key-never-shown"

func openStore(t testing.TB, db testutil.DB) *store.Store {
	t.Helper()
	dir := t.TempDir()
	st, err := store.Open(context.Background(), store.Options{URL: db.URL, DataDir: dir})
	require.NoError(t, err)
	t.Cleanup(func() { st.Close() })
	require.NoError(t, st.Migrate(context.Background()))
	kr, _, err := st.ResolveMasterKey(context.Background(), dir)
	require.NoError(t, err)
	st.SetKeyring(kr)
	return st
}

// fakeOpenAI answers /v1/audio/transcriptions: 200 {"text": text} when ok
// is set, else OpenAI's documented 401 error body.
func fakeOpenAI(t *testing.T, ok *atomic.Bool, calls *atomic.Int32) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path != "/v1/audio/transcriptions" || r.Header.Get("Authorization") != "Bearer "+testKey {
			w.WriteHeader(http.StatusNotFound)
			return
		}
		if !ok.Load() {
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = io.WriteString(w, `{"error":{"message":"Incorrect API key provided: sk-test-***.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`)
			return
		}
		_, _ = io.WriteString(w, `{"text":"hello"}`)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func domainCode(t *testing.T, err error) string {
	t.Helper()
	var de *domain.Error
	require.True(t, errors.As(err, &de), "want a domain error, got %v", err)
	return de.Code
}

func TestDefaultOnFreshInstall(t *testing.T) {
	st := openStore(t, testutil.DB{Name: "sqlite"})
	ctx := context.Background()
	svc := New(st, "de-DE")
	svc.localAvailable = func() error { return errors.New("no tools") }
	v, err := svc.Get(ctx)
	require.NoError(t, err)
	assert.Equal(t, speech.ProviderOff, v.Provider)
	assert.False(t, v.Saved)
	assert.Equal(t, "de-DE", v.TTSLanguage, "the configured tts_language")
	_, err = svc.Voices(ctx, "")
	assert.Equal(t, speech.CodeNotConfigured, domainCode(t, err))

	svc = New(st, "en-US")
	svc.localAvailable = func() error { return nil }
	v, err = svc.Get(ctx)
	require.NoError(t, err)
	assert.Equal(t, speech.ProviderLocal, v.Provider)
	assert.True(t, v.LocalAvailable)
}

func TestSaveVerifiesBeforeStoring(t *testing.T) {
	for _, db := range testutil.Databases(t) {
		t.Run(db.Name, func(t *testing.T) {
			ctx := context.Background()
			st := openStore(t, db)
			var ok atomic.Bool
			var calls atomic.Int32
			srv := fakeOpenAI(t, &ok, &calls)
			svc := New(st, "en-US")
			svc.localAvailable = func() error { return errors.New("no tools") }
			key := testKey

			// A failing test call stores nothing and returns the provider's error.
			_, err := svc.Save(ctx, Update{Provider: speech.ProviderOpenAI, APIKey: &key, BaseURL: srv.URL})
			require.Error(t, err)
			assert.Equal(t, speech.CodeProviderError, domainCode(t, err))
			assert.Contains(t, err.Error(), "Incorrect API key")
			assert.NotContains(t, err.Error(), testKey)
			assert.Equal(t, int32(1), calls.Load(), "one real test call")
			rev, err := st.SpeechSettingsRevision(ctx)
			require.NoError(t, err)
			assert.Zero(t, rev, "nothing stored")
			v, err := svc.Get(ctx)
			require.NoError(t, err)
			assert.False(t, v.Saved)
			assert.False(t, v.APIKeySet)

			// A passing test call stores the settings with the key verified.
			ok.Store(true)
			v, err = svc.Save(ctx, Update{Provider: speech.ProviderOpenAI, APIKey: &key, BaseURL: srv.URL, TTSLanguage: "fr-FR"})
			require.NoError(t, err)
			assert.True(t, v.Saved)
			assert.True(t, v.APIKeySet)
			assert.True(t, v.KeyVerified)
			assert.Equal(t, "fr-FR", v.TTSLanguage)
			text, err := svc.Transcribe(ctx, speech.Audio{Data: []byte("RIFF....WAVE"), MimeType: "audio/wav"})
			require.NoError(t, err)
			assert.Equal(t, "hello", text)
			vs, err := svc.Voices(ctx, "")
			require.NoError(t, err)
			require.NotEmpty(t, vs)
			assert.Equal(t, []string{"fr-FR"}, vs[0].LanguageCodes, "voices default to the saved tts language")

			// The key is encrypted at rest.
			sqlDB, err := st.SQL()
			require.NoError(t, err)
			var raw []byte
			require.NoError(t, sqlDB.QueryRow("SELECT api_key FROM speech_settings").Scan(&raw))
			assert.NotEmpty(t, raw)
			assert.NotContains(t, string(raw), testKey)
			assert.Contains(t, store.EncryptedColumns(), store.EncryptedColumn{Table: "speech_settings", Column: "api_key", PK: "id"})

			// Saving again without apiKey keeps the key; a failing test then
			// leaves the stored settings as they were.
			ok.Store(false)
			_, err = svc.Save(ctx, Update{Provider: speech.ProviderOpenAI, BaseURL: srv.URL, Model: "other"})
			require.Error(t, err)
			stored, _, err := st.GetSpeechSettings(ctx)
			require.NoError(t, err)
			assert.Equal(t, testKey, stored.APIKey)
			assert.True(t, stored.KeyVerified)
			assert.Equal(t, "", stored.Model)

			// Switching off needs no test call.
			v, err = svc.Save(ctx, Update{Provider: speech.ProviderOff})
			require.NoError(t, err)
			assert.Equal(t, speech.ProviderOff, v.Provider)
			assert.False(t, v.APIKeySet, "a changed provider does not keep the old key")
			_, err = svc.Transcribe(ctx, speech.Audio{Data: []byte("x"), MimeType: "audio/wav"})
			assert.Equal(t, speech.CodeNotConfigured, domainCode(t, err))
		})
	}
}

func TestSaveValidation(t *testing.T) {
	st := openStore(t, testutil.DB{Name: "sqlite"})
	svc := New(st, "en-US")
	empty := ""
	spaced := "a b"
	cases := map[string]Update{
		"unknown provider":   {Provider: "azure"},
		"google without key": {Provider: speech.ProviderGoogle},
		"openai empty key":   {Provider: speech.ProviderOpenAI, APIKey: &empty},
		"key with space":     {Provider: speech.ProviderOpenAI, APIKey: &spaced},
		"bad stt language":   {STTLanguage: "en US"},
		"bad tts language":   {TTSLanguage: "en-toolongsubtag"},
		"long phrase":        {Phrases: []string{strings.Repeat("a", 201)}},
		"too many phrases":   {Phrases: make([]string, 501)},
		"control in model":   {Model: "a\nb"},
	}
	for name, u := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := svc.Save(context.Background(), u)
			require.ErrorIs(t, err, domain.ErrInvalid)
			assert.Equal(t, speech.CodeInvalidSettings, domainCode(t, err))
		})
	}
	rev, err := st.SpeechSettingsRevision(context.Background())
	require.NoError(t, err)
	assert.Zero(t, rev)
}

// TestReplicasFollowChanges: a second service on the same database (another
// replica) picks up a saved change once its cache has expired.
func TestReplicasFollowChanges(t *testing.T) {
	st := openStore(t, testutil.DB{Name: "sqlite"})
	ctx := context.Background()
	var ok atomic.Bool
	ok.Store(true)
	var calls atomic.Int32
	srv := fakeOpenAI(t, &ok, &calls)
	a, b := New(st, "en-US"), New(st, "en-US")
	for _, s := range []*Service{a, b} {
		s.localAvailable = func() error { return errors.New("no tools") }
	}
	now := time.Unix(1_900_000_000, 0)
	b.now = func() time.Time { return now }

	first, err := b.Current(ctx)
	require.NoError(t, err)
	_, err = b.Voices(ctx, "")
	assert.Equal(t, speech.CodeNotConfigured, domainCode(t, err))

	key := testKey
	_, err = a.Save(ctx, Update{Provider: speech.ProviderOpenAI, APIKey: &key, BaseURL: srv.URL})
	require.NoError(t, err)

	same, err := b.Current(ctx)
	require.NoError(t, err)
	assert.Same(t, first, same, "within CacheTTL the cached service is used")
	now = now.Add(CacheTTL)
	next, err := b.Current(ctx)
	require.NoError(t, err)
	assert.NotSame(t, first, next, "rebuilt after the revision changed")
	vs, err := b.Voices(ctx, "en-GB")
	require.NoError(t, err)
	assert.NotEmpty(t, vs)
	now = now.Add(CacheTTL)
	again, err := b.Current(ctx)
	require.NoError(t, err)
	assert.Same(t, next, again, "an unchanged revision keeps the service (and its local concurrency slots)")
}

func TestValidLanguage(t *testing.T) {
	for tag, want := range map[string]bool{"": true, "en": true, "en-US": true, "zh-Hant-TW": true, "en_US": true,
		"cmn-Hans-CN": true, "en-": false, "-en": false, "en--US": false, "en US": false, "ünï": false, "abcdefghi": false} {
		assert.Equal(t, want, validLanguage(tag), tag)
	}
}
