package agent

import (
	"bytes"
	"encoding/binary"
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
	// splitmix64 finaliser of 5·0x9E3779B97F4A7C15 + 1 (word 1, bytes 8-15)
	// and + 2 (word 2, bytes 16-23), computed independently in Python.
	w1 := patternWord(5, 1)
	if got := binary.LittleEndian.Uint32(buf[12:16]); got != uint32(w1>>32) {
		t.Errorf("bytes 12-15 = %#x, want the high half of word 1 %#x", got, w1>>32)
	}
	if patternWord(0, 0) != 0 || patternWord(1, 0) != 0xe220a8397b1dcdaf {
		t.Errorf("patternWord(1,0) = %#x, want 0xe220a8397b1dcdaf (splitmix64 of the golden ratio)", patternWord(1, 0))
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
