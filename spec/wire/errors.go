package wire

import (
	"errors"
	"fmt"
)

// Sentinel errors wrapped by [*DecodeError] and the encoders; test with errors.Is.
var (
	// ErrTruncated: the input is shorter than the header it claims to be.
	ErrTruncated = errors.New("truncated")
	// ErrUnknownType: the opcode is outside 0x10..0x18.
	ErrUnknownType = errors.New("unknown packet type")
	// ErrUnsupported: the packet type does not exist in the chosen wire
	// version (GRANT, CUTOFFS or FREEZE in upstream).
	ErrUnsupported = errors.New("packet type not in this wire version")
	// ErrSegments: a multi-segment GSO DATA frame whose interleaved segment
	// headers cannot be followed.
	ErrSegments = errors.New("bad GSO segment layout")
)

// DecodeError describes why bytes could not be decoded as a Homa packet.
// Type is the opcode read (0 if not even that byte was present), Field the
// HomaModule name of the first field that does not fit (e.g. "priority"),
// Want and Have the needed and available lengths in bytes, and Err one of the
// sentinel errors above.
type DecodeError struct {
	Type    PacketType
	Version Version
	Field   string
	Want    int
	Have    int
	Err     error
	// Detail, when set, explains the failure in more words (e.g. the GSO
	// segment offsets found and expected).
	Detail string
}

// Error renders e as one line, e.g.
// "truncated GRANT header: field priority needs 33 bytes, have 32".
func (e *DecodeError) Error() string {
	switch {
	case errors.Is(e.Err, ErrTruncated):
		name := "Homa"
		if e.Type.IsValid() {
			name = e.Type.String()
		}
		return fmt.Sprintf("truncated %s header: field %s needs %d bytes, have %d", name, e.Field, e.Want, e.Have)
	case errors.Is(e.Err, ErrUnknownType):
		return fmt.Sprintf("unknown packet type 0x%02x at offset 11", uint8(e.Type))
	case errors.Is(e.Err, ErrUnsupported):
		return fmt.Sprintf("packet type %s does not exist in wire version %s", e.Type, e.Version)
	case errors.Is(e.Err, ErrSegments) && e.Detail != "":
		return fmt.Sprintf("bad GSO DATA frame: %s", e.Detail)
	default:
		if e.Detail != "" {
			return fmt.Sprintf("%s %s: %v: %s", e.Type, e.Field, e.Err, e.Detail)
		}
		return fmt.Sprintf("%s %s: %v", e.Type, e.Field, e.Err)
	}
}

// Unwrap returns the sentinel error.
func (e *DecodeError) Unwrap() error { return e.Err }
