package agent

import (
	"encoding/binary"
	"fmt"
)

// PayloadHeaderLen is the length in bytes of the payload header: the
// response length (uint32 little-endian, bytes 0-3) and the call id
// (uint64 little-endian, bytes 4-11).
const PayloadHeaderLen = 12

// MaxMessage is the largest Homa message in bytes (HomaModule homa.h
// HOMA_MAX_MESSAGE_LENGTH).
const MaxMessage = 1000000

// patternWord returns word k of the payload pattern of call id: output k
// (from 0) of the splitmix64 generator seeded with id, that is the
// splitmix64 finaliser of id + (k+1)·0x9E3779B97F4A7C15 (mod 2^64). Byte i
// of a message is byte i%8 of word i/8 written little-endian.
func patternWord(id, k uint64) uint64 {
	z := id + (k+1)*0x9E3779B97F4A7C15
	z ^= z >> 30
	z *= 0xBF58476D1CE4E5B9
	z ^= z >> 27
	z *= 0x94D049BB133111EB
	return z ^ z>>31
}

// FillPayload fills buf (a request or a response of call id) in the payload
// format of docs/agent-protocol.md: bytes 0-3 hold respLen (for a request,
// the length of the response the server must send; for a response, its own
// length), bytes 4-11 the call id, and every other byte i is byte i%8 of
// patternWord(id, i/8). A message shorter than PayloadHeaderLen has no
// header: it is the pattern of id 0, and its response has the same length.
// It does not allocate.
func FillPayload(buf []byte, id uint64, respLen uint32) {
	if len(buf) < PayloadHeaderLen {
		id = 0
	}
	fillPattern(buf, id, 0)
	if len(buf) >= PayloadHeaderLen {
		binary.LittleEndian.PutUint32(buf[0:4], respLen)
		binary.LittleEndian.PutUint64(buf[4:12], id)
	}
}

// fillPattern writes the pattern of id into buf from byte offset start
// (a multiple of 8).
func fillPattern(buf []byte, id uint64, start int) {
	i := start
	for ; i+8 <= len(buf); i += 8 {
		binary.LittleEndian.PutUint64(buf[i:], patternWord(id, uint64(i/8)))
	}
	if i < len(buf) {
		w := patternWord(id, uint64(i/8))
		for ; i < len(buf); i++ {
			buf[i] = byte(w >> (8 * (i % 8)))
		}
	}
}

// PayloadHeader returns the response length and call id in a message's
// header; ok is false for a message shorter than PayloadHeaderLen (then the
// response must be len(buf) bytes and the id is unknown).
func PayloadHeader(buf []byte) (respLen uint32, id uint64, ok bool) {
	if len(buf) < PayloadHeaderLen {
		return uint32(len(buf)), 0, false
	}
	return binary.LittleEndian.Uint32(buf[0:4]), binary.LittleEndian.Uint64(buf[4:12]), true
}

// CheckPayload checks that buf is a message of call id in the payload format
// (see FillPayload): the id in its header and every pattern byte. It does
// not check bytes 0-3 (for a response the caller compares them and
// len(buf) with the expected length). The error names the first wrong
// offset with the byte found and the byte expected. It does not allocate
// unless it returns an error.
func CheckPayload(buf []byte, id uint64) error {
	i := 0
	if len(buf) < PayloadHeaderLen {
		id = 0
	} else {
		if got := binary.LittleEndian.Uint64(buf[4:12]); got != id {
			return fmt.Errorf("payload: header carries call id %d, want %d", got, id)
		}
		// Bytes 12-15 end the word whose first half is the header.
		if j := checkBytes(buf[:min(16, len(buf))], id, PayloadHeaderLen); j >= 0 {
			return patternMismatch(buf, id, j)
		}
		i = 16
	}
	for ; i+8 <= len(buf); i += 8 {
		if binary.LittleEndian.Uint64(buf[i:]) != patternWord(id, uint64(i/8)) {
			break
		}
	}
	if j := checkBytes(buf, id, i); j >= 0 {
		return patternMismatch(buf, id, j)
	}
	return nil
}

// checkBytes compares buf[from:] byte by byte with the pattern of id and
// returns the first wrong offset, or -1.
func checkBytes(buf []byte, id uint64, from int) int {
	for j := from; j < len(buf); j++ {
		if buf[j] != patternByte(id, j) {
			return j
		}
	}
	return -1
}

// patternByte returns byte i of the pattern of id.
func patternByte(id uint64, i int) byte {
	return byte(patternWord(id, uint64(i/8)) >> (8 * (i % 8)))
}

// patternMismatch builds the error for the wrong byte at offset j.
func patternMismatch(buf []byte, id uint64, j int) error {
	return fmt.Errorf("payload: byte %d of %d is 0x%02x, want 0x%02x (call id %d)", j, len(buf), buf[j], patternByte(id, j), id)
}
