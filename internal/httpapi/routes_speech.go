package httpapi

import (
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/lcmproject/lcm/internal/audit"
	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/speech"
	"github.com/lcmproject/lcm/internal/speechsvc"
)

// routesSpeech is issue 8's speech endpoints (spec part 2: bearer token,
// the session cookie works too) and their settings.
func (s *Server) routesSpeech() {
	s.handle(http.MethodPost, "/v1/speech/stt", Login(), s.speechToText)
	s.handle(http.MethodGet, "/v1/speech/voices", Login(), s.listVoices)
	s.handle(http.MethodGet, "/api/v1/settings/speech", Need(domain.PermSettingsManage), s.getSpeechSettings)
	s.handle(http.MethodPut, "/api/v1/settings/speech", Need(domain.PermSettingsManage), s.updateSpeechSettings)
}

// speechToText streams the body through speech.DecodeSTTRequest: the
// base64 text is never held, and a body over the 25 MiB limit stops being
// read at the limit (413).
func (s *Server) speechToText(c *gin.Context) {
	body := http.MaxBytesReader(c.Writer, c.Request.Body, speech.MaxRequestBytes)
	a, err := speech.DecodeSTTRequest(body, speech.MaxAudioBytes)
	if err != nil {
		s.respondError(c, err)
		return
	}
	text, err := s.deps.Services.Speech.Transcribe(c.Request.Context(), a)
	if err != nil {
		s.respondError(c, err)
		return
	}
	c.JSON(http.StatusOK, gin.H{"text": text})
}

func (s *Server) listVoices(c *gin.Context) {
	vs, err := s.deps.Services.Speech.Voices(c.Request.Context(), c.Query("language"))
	if err != nil {
		s.respondError(c, err)
		return
	}
	if vs == nil {
		vs = []speech.Voice{}
	}
	for i := range vs {
		if vs[i].LanguageCodes == nil {
			vs[i].LanguageCodes = []string{}
		}
	}
	c.JSON(http.StatusOK, gin.H{"voices": vs})
}

// speechSettingsDTO is GET/PUT /api/v1/settings/speech's answer: the key is
// never returned, only whether one is set and verified.
type speechSettingsDTO struct {
	Provider       string     `json:"provider"`
	APIKeySet      bool       `json:"apiKeySet"`
	KeyVerified    bool       `json:"keyVerified"`
	BaseURL        string     `json:"baseUrl"`
	Model          string     `json:"model"`
	STTLanguage    string     `json:"sttLanguage"`
	TTSLanguage    string     `json:"ttsLanguage"`
	Phrases        []string   `json:"phrases"`
	Saved          bool       `json:"saved"`
	LocalAvailable bool       `json:"localAvailable"`
	UpdatedAt      *time.Time `json:"updatedAt"`
}

// speechSettingsRequest is the body of PUT /api/v1/settings/speech; an
// absent apiKey keeps the stored key (same provider), "" removes it.
type speechSettingsRequest struct {
	Provider    string   `json:"provider"`
	APIKey      *string  `json:"apiKey"`
	BaseURL     string   `json:"baseUrl"`
	Model       string   `json:"model"`
	STTLanguage string   `json:"sttLanguage"`
	TTSLanguage string   `json:"ttsLanguage"`
	Phrases     []string `json:"phrases"`
}

func toSpeechSettingsDTO(v speechsvc.Settings) speechSettingsDTO {
	d := speechSettingsDTO{Provider: v.Provider, APIKeySet: v.APIKeySet, KeyVerified: v.KeyVerified, BaseURL: v.BaseURL,
		Model: v.Model, STTLanguage: v.STTLanguage, TTSLanguage: v.TTSLanguage, Phrases: v.Phrases,
		Saved: v.Saved, LocalAvailable: v.LocalAvailable}
	if !v.UpdatedAt.IsZero() {
		t := v.UpdatedAt
		d.UpdatedAt = &t
	}
	return d
}

func (s *Server) getSpeechSettings(c *gin.Context) {
	v, err := s.deps.Services.Speech.Get(c.Request.Context())
	if err != nil {
		s.respondError(c, err)
		return
	}
	c.JSON(http.StatusOK, toSpeechSettingsDTO(v))
}

func (s *Server) updateSpeechSettings(c *gin.Context) {
	var req speechSettingsRequest
	if !bindJSON(c, &req) {
		return
	}
	v, err := s.deps.Services.Speech.Save(c.Request.Context(), speechsvc.Update{Provider: req.Provider, APIKey: req.APIKey,
		BaseURL: req.BaseURL, Model: req.Model, STTLanguage: req.STTLanguage, TTSLanguage: req.TTSLanguage, Phrases: req.Phrases})
	// The key itself never enters the log: only whether it was set, kept or removed.
	keyChange := "kept"
	if req.APIKey != nil {
		keyChange = map[bool]string{true: "removed", false: "set"}[*req.APIKey == ""]
	}
	s.note(c, "settings.speech_updated", audit.Target("settings", "speech"), map[string]any{"provider": req.Provider,
		"model": req.Model, "api_key": keyChange})
	if err != nil {
		s.respondError(c, err)
		return
	}
	c.JSON(http.StatusOK, toSpeechSettingsDTO(v))
}
