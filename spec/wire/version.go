package wire

import "fmt"

// Version selects one of the Homa wire formats. The zero value is VersionAuto.
type Version uint8

const (
	// VersionAuto picks a version per packet from the IP protocol and the
	// header sizes (see [DetectVersion]).
	VersionAuto Version = iota
	// VersionCurrent is HomaModule main / net-next / linux_6.13.9: IP protocol
	// 146, GRANT 33 bytes, ACK 80 bytes (10-byte homa_ack), DATA ack without
	// client_port.
	VersionCurrent
	// Version2024 is the 2022-2024 format of HomaModule branch linux_6.1.38:
	// IP protocol 253, GRANT 34 bytes with resend_all, ACK 90 bytes (12-byte
	// homa_ack with client_port), DATA ack with client_port.
	Version2024
	// VersionUpstream is what HomaModule util/strip.py leaves for the upstream
	// kernel: no GRANT, CUTOFFS or FREEZE, RESEND 36 bytes (no priority),
	// flags/urgent/incoming/cutoff_version reserved (0), no priorities.
	VersionUpstream
	// Version2025 is HomaModule main from be127d8 (2024-12-10, homa_ack
	// without client_port) to 04df9e0 (2025-07-07, GRANT without
	// resend_all), and branch linux_6.10.6: IP protocol 146, ACK 80 bytes
	// and DATA as VersionCurrent, GRANT 34 bytes with resend_all as
	// Version2024.
	Version2025
)

var versionNames = [...]string{"auto", "current", "2024", "upstream", "2025"}

// String returns the name used on the command line: auto, current, 2024,
// upstream or 2025.
func (v Version) String() string {
	if int(v) < len(versionNames) {
		return versionNames[v]
	}
	return fmt.Sprintf("Version(%d)", uint8(v))
}

// ParseVersion maps a command-line name (auto, current, 2024, upstream,
// 2025) to a Version. It returns an error naming the valid choices for
// anything else.
func ParseVersion(s string) (Version, error) {
	for i, n := range versionNames {
		if s == n {
			return Version(i), nil
		}
	}
	return VersionAuto, fmt.Errorf("unknown wire version %q: want one of auto, current, 2024, upstream, 2025", s)
}

// IPProtocol returns the IP protocol number that version v uses natively:
// 146 for current, upstream and 2025, 253 for 2024, 0 for auto.
func (v Version) IPProtocol() uint8 {
	switch v {
	case VersionCurrent, VersionUpstream, Version2025:
		return IPProtoHoma
	case Version2024:
		return IPProtoHoma2024
	default:
		return 0
	}
}

// HasPriorities reports whether version v carries priorities (GRANT and
// RESEND priority bytes, CUTOFFS, IP precedence). Upstream does not.
func (v Version) HasPriorities() bool { return v != VersionUpstream }
