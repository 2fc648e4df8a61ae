package rawip

// Test helpers for the external tests (package rawip_test).
var (
	GSOFrame = gsoFrame
	MsgByte  = msgByte
)
