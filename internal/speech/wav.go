package speech

import "encoding/binary"

// silenceWAV returns seconds of 16 kHz mono 16-bit silence as a WAV file;
// Verify sends it as the cheapest real recognition request.
func silenceWAV(seconds int) []byte {
	n := seconds * pcmRate * 2
	b := make([]byte, 44+n)
	copy(b[0:], "RIFF")
	binary.LittleEndian.PutUint32(b[4:], uint32(36+n))
	copy(b[8:], "WAVEfmt ")
	binary.LittleEndian.PutUint32(b[16:], 16)      // fmt chunk size
	binary.LittleEndian.PutUint16(b[20:], 1)       // PCM
	binary.LittleEndian.PutUint16(b[22:], 1)       // mono
	binary.LittleEndian.PutUint32(b[24:], pcmRate) // sample rate
	binary.LittleEndian.PutUint32(b[28:], pcmRate*2)
	binary.LittleEndian.PutUint16(b[32:], 2)  // block align
	binary.LittleEndian.PutUint16(b[34:], 16) // bits per sample
	copy(b[36:], "data")
	binary.LittleEndian.PutUint32(b[40:], uint32(n))
	return b
}
