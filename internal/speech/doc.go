// Package speech transcribes recorded audio to text and lists text-to-speech
// voices through one of three providers chosen in the settings:
//
//   - "local": offline; ffmpeg decodes the recording to 16 kHz mono PCM,
//     pocketsphinx_continuous (Debian's pocketsphinx 0.8 with the en-us
//     model) recognises it, and `espeak-ng --voices` supplies the voices.
//     Recognition uses the general language model by default or, when the
//     settings hold a JSGF grammar or a phrase list, only those phrases.
//   - "google": Google Cloud Speech-to-Text v1 (speech:recognize) and
//     Text-to-Speech v1 (voices) over REST with an API key.
//   - "openai": an OpenAI-compatible /v1/audio/transcriptions endpoint at a
//     configurable base URL with a Bearer key; its voices are OpenAI's fixed
//     list.
//
// The package is a pure service: no HTTP handler and no database. The HTTP
// layer decodes the request with [DecodeSTTRequest] (streaming, bounded
// memory) and calls [Service.TranscribeAudio], or passes the base64 string to
// [Service.Transcribe]. Every error returned by a Service is a
// *domain.Error whose Code is one of the Code* constants and whose Message is
// safe to show to a client; API keys never appear in errors or logs.
//
// See docs/speech.md for operators.
package speech
