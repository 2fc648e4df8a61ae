package wire

import (
	"encoding/binary"
	"fmt"
)

// AppendGSOFrame appends a multi-segment DATA frame as HomaModule's sender
// hands it to a device with GSO (docs/homa-facts.md §1.7; homa_wire.h, the
// seg header after the 52-byte prefix): f's 56-byte header with doff 13
// (DoffGSO) and seg.offset = f.SegOffset, the offset of the first segment;
// then f.Payload cut into segments of segData bytes (the last may be
// shorter), every segment after the first preceded by its 4-byte seg header
// holding its offset. Data.Segments reads it back. Errors: segData < 1, or
// f's header does not encode.
func AppendGSOFrame(dst []byte, f *DataFields, segData int, o EncodeOptions) ([]byte, error) {
	if segData < 1 {
		return dst, fmt.Errorf("wire: GSO frame with %d-byte segments", segData)
	}
	h := *f
	h.Payload = nil
	h.Common.Doff = DoffGSO
	o.FixLengths = false // keep doff 13
	start := len(dst)
	dst, err := h.AppendTo(dst, o)
	if err != nil {
		return dst[:start], err
	}
	for i := 0; i < len(f.Payload); i += segData {
		if i > 0 {
			dst = binary.BigEndian.AppendUint32(dst, f.SegOffset+uint32(i))
		}
		dst = append(dst, f.Payload[i:min(i+segData, len(f.Payload))]...)
	}
	return dst, nil
}
