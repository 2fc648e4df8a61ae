package agent

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"strings"
	"testing"
)

func TestPayloadRoundTrip(t *testing.T) {
	for _, n := range []int{1, 7, 11, 12, 13, 15, 16, 17, 24, 100, 1423, 65537, MaxMessage} {
		buf := make([]byte, n)
		FillPayload(buf, 77, 4242)
		if err := CheckPayload(buf, 77); err != nil {
			t.Errorf("len %d: %v", n, err)
		}
		respLen, id, ok := PayloadHeader(buf)
		if n >= PayloadHeaderLen && (respLen != 4242 || id != 77 || !ok) {
			t.Errorf("len %d: header = %d, %d, %v", n, respLen, id, ok)
		}
		if n < PayloadHeaderLen && (ok || int(respLen) != n) {
			t.Errorf("len %d (short): header = %d, %v; want no header and response length %d", n, respLen, ok, n)
		}
		// Every single-byte corruption outside bytes 0-3 is caught.
		for _, off := range []int{4, 11, 12, 15, 16, n / 2, n - 1} {
			if off >= n || (n >= PayloadHeaderLen && off < 4) {
				continue
			}
			buf[off] ^= 0x40
			if err := CheckPayload(buf, 77); err == nil {
				t.Errorf("len %d: flipped byte %d not caught", n, off)
			}
			buf[off] ^= 0x40
		}
	}
}

func TestPayloadKnownBytes(t *testing.T) {
	// The documented layout: bytes 0-3 response length, 4-11 id (little
	// endian), then byte i = byte i%8 of patternWord(id, i/8).
	buf := make([]byte, 20)
	FillPayload(buf, 5, 300)
	if binary.LittleEndian.Uint32(buf) != 300 || binary.LittleEndian.Uint64(buf[4:]) != 5 {
		t.Fatalf("header bytes % x", buf[:12])
	}
	w1 := patternWord(5, 1)
	if got := binary.LittleEndian.Uint32(buf[12:16]); got != uint32(w1>>32) {
		t.Errorf("bytes 12-15 = %#x, want the high half of word 1 %#x", got, w1>>32)
	}
	// splitmix64 seeded with 0 starts 0xe220a8397b1dcdaf, 0x6e789e6aa1b965f4.
	if patternWord(0, 0) != 0xe220a8397b1dcdaf || patternWord(0, 1) != 0x6e789e6aa1b965f4 {
		t.Errorf("patternWord(0, 0..1) = %#x, %#x; want splitmix64's first outputs", patternWord(0, 0), patternWord(0, 1))
	}
	// The same bytes as the Python sketch in docs/agent-protocol.md.
	if got := fmt.Sprintf("%x", buf); got != wantPython20 {
		t.Errorf("FillPayload(20 bytes, id 5, 300) = %s, want %s", got, wantPython20)
	}
	short := make([]byte, 5)
	FillPayload(short, 5, 5)
	if got := fmt.Sprintf("%x", short); got != "afcd1d7b39" {
		t.Errorf("5-byte message = %s, want afcd1d7b39 (id 0's pattern)", got)
	}
}

func TestCheckPayloadErrors(t *testing.T) {
	buf := make([]byte, 100)
	FillPayload(buf, 1, 100)
	if err := CheckPayload(buf, 2); err == nil || !strings.Contains(err.Error(), "call id 1, want 2") {
		t.Errorf("wrong id: %v", err)
	}
	copy(buf[50:], bytes.Repeat([]byte{0}, 8))
	if err := CheckPayload(buf, 1); err == nil || !strings.Contains(err.Error(), "byte 5") {
		t.Errorf("zeroed bytes 50-57: %v; want the first wrong offset", err)
	}
}

func TestPayloadNoAllocs(t *testing.T) {
	buf := make([]byte, 100000)
	if n := testing.AllocsPerRun(10, func() {
		FillPayload(buf, 3, 100000)
		if CheckPayload(buf, 3) != nil {
			t.Fatal("bad payload")
		}
	}); n != 0 {
		t.Errorf("FillPayload+CheckPayload allocate %v times per run, want 0", n)
	}
}

// BenchmarkPayload reports fill and check throughput of a 1 MB message
// against copy of the same bytes (the baseline in the same run).
func BenchmarkPayload(b *testing.B) {
	buf := make([]byte, MaxMessage)
	src := make([]byte, MaxMessage)
	b.Run("copy-baseline", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(MaxMessage)
		for b.Loop() {
			copy(buf, src)
		}
	})
	b.Run("fill", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(MaxMessage)
		for b.Loop() {
			FillPayload(buf, 9, MaxMessage)
		}
	})
	b.Run("check", func(b *testing.B) {
		FillPayload(buf, 9, MaxMessage)
		b.ReportAllocs()
		b.SetBytes(MaxMessage)
		for b.Loop() {
			if CheckPayload(buf, 9) != nil {
				b.Fatal("bad payload")
			}
		}
	})
}

// wantPython20 is FillPayload(20 bytes, id 5, response 300) as computed by
// the Python sketch of docs/agent-protocol.md.
const wantPython20 = "2c01000005000000000000004d3197c047c16b10"
